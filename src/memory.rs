//! The memory this machine has available, for refusing runs that cannot fit.

use std::path::Path;

/// `MemAvailable` of /proc/meminfo in bytes, or less where this process's cgroup (a container
/// or a batch job's allocation) allows less (None where neither can be read).
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok().and_then(|text| {
        // cgroup v2: the line "0::/path" of the unified hierarchy; v1: "N:memory:/path".
        let v2 = text.lines().find_map(|l| l.strip_prefix("0::"));
        let v2 = v2.and_then(|own| cgroup_room(Path::new("/sys/fs/cgroup"), own.trim(), ["memory.max", "memory.current"]));
        let v1 = text.lines().find_map(|l| l.split_once(":memory:").map(|(_, own)| own));
        let v1 = v1.and_then(|own| {
            cgroup_room(Path::new("/sys/fs/cgroup/memory"), own.trim(), ["memory.limit_in_bytes", "memory.usage_in_bytes"])
        });
        v2.or(v1)
    });
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The least room (the limit less the use, the files `[limit, use]`: `memory.max` and
/// `memory.current` in v2) of the cgroup `own` under `root` and of the cgroups above it; None
/// where none sets a limit.
fn cgroup_room(root: &Path, own: &str, [limit, used]: [&str; 2]) -> Option<u64> {
    let read = |dir: &Path, file: &str| -> Option<u64> { std::fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok() };
    let mut dir = root.join(own.trim_start_matches('/'));
    let mut least: Option<u64> = None;
    while dir.starts_with(root) {
        // v2's "max" (no limit) does not parse; v1's no limit is a number near 2^63.
        if let Some(max) = read(&dir, limit) {
            let room = max.saturating_sub(read(&dir, used).unwrap_or(0));
            least = Some(least.map_or(room, |l| l.min(room)));
        }
        if !dir.pop() {
            break;
        }
    }
    least
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: [&str; 2] = ["memory.max", "memory.current"];

    #[test]
    fn the_tightest_cgroup_limit_above_a_process_counts() {
        let root = std::env::temp_dir().join(format!("sim_cgroup_{}", std::process::id()));
        let job = root.join("batch/job7");
        std::fs::create_dir_all(&job).unwrap();
        let put = |dir: &Path, file: &str, text: &str| std::fs::write(dir.join(file), text).unwrap();
        put(&job, "memory.max", "max\n");
        put(&job, "memory.current", "100\n");
        assert_eq!(cgroup_room(&root, "/batch/job7", V2), None, "no limit anywhere");
        put(&root.join("batch"), "memory.max", "1000\n");
        put(&root.join("batch"), "memory.current", "400\n");
        assert_eq!(cgroup_room(&root, "/batch/job7", V2), Some(600), "the parent's limit");
        put(&job, "memory.max", "500\n");
        assert_eq!(cgroup_room(&root, "/batch/job7", V2), Some(400), "the job's own, tighter");
        std::fs::remove_dir_all(root).unwrap();
    }
}
