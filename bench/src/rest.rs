//! `tinykube-bench rest`: the whole stack of `tinykube up --nodes N` at rest: each process's
//! VmRSS, anonymous and file-backed parts, PSS and threads, and their sum, once every node has
//! been Ready for a while; also the cold start to ready. With `--before DIR` the same runs
//! alternate with another build's binaries (DIR holds its `tinykube` and the components).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::binary;

/// What /proc says about one process, in KiB.
#[derive(Debug, Default, Clone, Copy)]
struct Mem {
    rss: u64,
    anon: u64,
    file: u64,
    pss: u64,
    threads: u64,
}

impl Mem {
    fn add(&mut self, o: &Mem) {
        self.rss += o.rss;
        self.anon += o.anon;
        self.file += o.file;
        self.pss += o.pss;
        self.threads += o.threads;
    }
}

/// The value of `key:` in a /proc file of `key: value [kB]` lines.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn read_mem(pid: u32) -> Result<Mem> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("process {pid} is gone"))?;
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    Ok(Mem {
        rss: field(&status, "VmRSS").context("VmRSS")?,
        anon: field(&status, "RssAnon").unwrap_or(0),
        file: field(&status, "RssFile").unwrap_or(0),
        pss: field(&rollup, "Pss").unwrap_or(0),
        threads: field(&status, "Threads").unwrap_or(0),
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One run's figures: the start to ready, and (component, memory) sorted by name.
struct Run {
    ready: Duration,
    launcher: Mem,
    components: Vec<(String, Mem)>,
}

impl Run {
    fn sum(&self) -> Mem {
        let mut total = Mem::default();
        for (_, m) in &self.components {
            total.add(m);
        }
        total
    }
}

/// Start `tinykube up` from `bin_dir` on a fresh data dir, wait until ready plus `rest`, read
/// every process's memory, stop it.
async fn one_run(bin_dir: &Path, nodes: usize, rest: Duration) -> Result<Run> {
    let up = crate::workloads::up_from(&bin_dir.join("tinykube"), nodes, &[]).await?;
    tokio::time::sleep(rest).await;
    let read = || -> Result<Run> {
        let launcher = read_mem(up.launcher_pid()?)?;
        let mut components = Vec::new();
        for (name, pid) in crate::component_pids(&up.data_dir())? {
            components.push((name, read_mem(pid)?));
        }
        Ok(Run {
            ready: up.ready,
            launcher,
            components,
        })
    };
    let result = read();
    up.down().await;
    result
}

fn print_run(label: &str, run: &Run) {
    println!("{label}: ready in {:.0} ms", run.ready.as_secs_f64() * 1e3);
    println!(
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "process", "VmRSS", "anon", "file", "PSS", "threads"
    );
    let row = |name: &str, m: &Mem| {
        println!(
            "  {:<22} {:>5.1} MiB {:>5.1} MiB {:>5.1} MiB {:>5.1} MiB {:>7}",
            name,
            mib(m.rss),
            mib(m.anon),
            mib(m.file),
            mib(m.pss),
            m.threads
        )
    };
    for (name, m) in &run.components {
        row(name, m);
    }
    let sum = run.sum();
    row("sum of the components", &sum);
    row("launcher (tinykube up)", &run.launcher);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Summary line of several runs of one build.
fn print_summary(label: &str, runs: &[Run]) {
    if runs.is_empty() {
        return;
    }
    let sums: Vec<Mem> = runs.iter().map(Run::sum).collect();
    let range = |f: fn(&Mem) -> u64| {
        let v: Vec<f64> = sums.iter().map(|m| mib(f(m))).collect();
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{lo:.1}–{hi:.1} MiB")
    };
    let ready = median(runs.iter().map(|r| r.ready.as_secs_f64() * 1e3).collect());
    println!(
        "{label}: sum of the components' VmRSS {}, anon {}, PSS {}; cold start to ready median {ready:.0} ms  ({} runs)",
        range(|m| m.rss),
        range(|m| m.anon),
        range(|m| m.pss),
        runs.len()
    );
}

pub async fn bench_rest(
    nodes: usize,
    rest: Duration,
    runs: usize,
    before: Option<PathBuf>,
) -> Result<()> {
    let this = binary("tinykube")?
        .parent()
        .context("bench binary has a folder")?
        .to_path_buf();
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..runs.max(1) {
        if let Some(dir) = &before {
            let run = one_run(dir, nodes, rest).await?;
            print_run(&format!("run {} before ({})", i + 1, dir.display()), &run);
            theirs.push(run);
        }
        let run = one_run(&this, nodes, rest).await?;
        print_run(&format!("run {} ({})", i + 1, this.display()), &run);
        mine.push(run);
    }
    println!(
        "workload: `tinykube up --nodes {nodes} --port 0` on a fresh data dir, memory read {}s after its ready line",
        rest.as_secs()
    );
    if let Some(dir) = &before {
        print_summary(&format!("before ({})", dir.display()), &theirs);
    }
    print_summary(&format!("this build ({})", this.display()), &mine);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_of_proc_files() {
        let status = "Name:\tx\nVmRSS:\t   27628 kB\nRssAnon:\t    9448 kB\nThreads:\t17\n";
        let cases = [
            ("VmRSS", Some(27628)),
            ("RssAnon", Some(9448)),
            ("Threads", Some(17)),
            ("Rss", None),
            ("VmHWM", None),
        ];
        for (key, want) in cases {
            assert_eq!(field(status, key), want, "{key}");
        }
    }
}
