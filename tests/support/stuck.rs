//! What a process a test gave up waiting for was doing: it and its
//! descendants, each thread's state and kernel wait channel, and (when
//! `gdb` is on PATH) each process's stacks. Diagnostics only: a test fails
//! on its own assertion, this text only says where things stood.

use std::process::Command;

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| parent(*p) == Some(pid))
        .collect()
}

/// The parent of `pid` (field 4 of /proc/PID/stat, after the command's
/// closing parenthesis).
fn parent(pid: u32) -> Option<u32> {
    super::proc_stat_field(pid, 1)?.parse().ok()
}

/// One line per thread of `pid`: its id, state and wait channel.
fn threads(pid: u32) -> String {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "  (gone)\n".into();
    };
    let mut s = String::new();
    for t in dir.filter_map(|e| e.ok()) {
        let p = t.path();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        let wchan = std::fs::read_to_string(p.join("wchan")).unwrap_or_default();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        s.push_str(&format!(
            "  thread {} {} {state} wchan={wchan}\n",
            t.file_name().to_string_lossy(),
            comm.trim()
        ));
    }
    s
}

/// Each process's stacks from `gdb`, when it is installed.
fn stacks(pid: u32) -> String {
    let Ok(o) = Command::new("gdb")
        .args([
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt 20",
        ])
        .output()
    else {
        return String::new();
    };
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("Thread"))
        .map(|l| format!("  {l}\n"))
        .collect()
}

/// `pid` and every descendant: command line, threads, stacks.
pub fn describe(pid: u32) -> String {
    let mut s = String::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        s.push_str(&format!("process {p}: {cmd}\n{}{}", threads(p), stacks(p)));
        todo.extend(children(p));
    }
    s
}
