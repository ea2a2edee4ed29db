//! GPU power during a benchmark, sampled with `nvidia-smi` as GPU Ocean measured it (spec
//! `shallow_water.md` §12): a background `nvidia-smi --loop-ms` started 3 s before the timed
//! steps and stopped 3 s after; the samples inside the timed interval give the mean power, the
//! idle windows before and after give the idle power to subtract.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Sampling period (GPU Ocean's scripts: 50 ms).
pub const PERIOD_MS: u64 = 50;
/// Idle window before and after the timed interval.
pub const IDLE: Duration = Duration::from_secs(3);

/// One `power.draw` reading (W) and when it arrived.
type Sample = (Instant, f64);

/// A running `nvidia-smi` sampler.
pub struct Sampler {
    child: Child,
    samples: Arc<Mutex<Vec<Sample>>>,
}

/// What the samples say about an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Power {
    /// Mean power draw inside the interval (W).
    pub mean_w: f64,
    /// Mean power draw in the idle windows (W).
    pub idle_w: f64,
    /// Samples inside the interval.
    pub samples: usize,
}

impl Sampler {
    /// Start `nvidia-smi` sampling GPU 0 every [`PERIOD_MS`]; an error says why it cannot.
    pub fn start() -> Result<Sampler, String> {
        let mut child = Command::new("nvidia-smi")
            .args(["--id=0", "--query-gpu=power.draw", "--format=csv,noheader,nounits"])
            .arg(format!("--loop-ms={PERIOD_MS}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("nvidia-smi cannot be started ({e})"))?;
        let out = child.stdout.take().ok_or("nvidia-smi has no output")?;
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = samples.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                // "[N/A]" or "[Not Supported]" on parts without a power sensor: no sample.
                if let Ok(w) = line.trim().parse::<f64>() {
                    sink.lock().unwrap_or_else(|p| p.into_inner()).push((Instant::now(), w));
                }
            }
        });
        Ok(Sampler { child, samples })
    }

    /// Stop sampling; the power inside `from..to`, or why there is none.
    pub fn finish(mut self, from: Instant, to: Instant) -> Result<Power, String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
        summarise(&samples, from, to)
    }
}

/// Mean power of the samples inside `from..=to` and of those outside it.
fn summarise(samples: &[Sample], from: Instant, to: Instant) -> Result<Power, String> {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (inside, outside): (Vec<Sample>, Vec<Sample>) = samples.iter().partition(|(t, _)| *t >= from && *t <= to);
    let inside: Vec<f64> = inside.iter().map(|s| s.1).collect();
    let outside: Vec<f64> = outside.iter().map(|s| s.1).collect();
    if inside.is_empty() || outside.is_empty() {
        return Err(format!(
            "nvidia-smi gave {} power readings during the run and {} while idle (time the run longer, --seconds)",
            inside.len(),
            outside.len()
        ));
    }
    Ok(Power { mean_w: mean(&inside), idle_w: mean(&outside), samples: inside.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_and_idle_means() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let s: Vec<Sample> = vec![(at(0), 30.0), (at(50), 34.0), (at(100), 200.0), (at(150), 220.0), (at(200), 32.0)];
        let p = summarise(&s, at(100), at(150)).unwrap();
        assert_eq!(p, Power { mean_w: 210.0, idle_w: 32.0, samples: 2 });
        assert!(summarise(&s, at(10), at(20)).unwrap_err().contains("0 power readings during the run"));
    }
}
