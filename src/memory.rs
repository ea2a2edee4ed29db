//! The memory this machine has available, for refusing runs that cannot fit.

/// `MemAvailable` of /proc/meminfo in bytes (None where it cannot be read).
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
