//! `payidem-sim`: runs the deterministic simulator.
//!
//! ```text
//! payidem-sim --seed N [--bug NAME] [--trace]   replay one seed
//! payidem-sim [--seconds S] [--first-seed N] [--regressions FILE]
//!                                               seeds for S seconds of real time
//! payidem-sim --hunt NAME|all [--seconds S]     find a planted bug
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use payidem_sim::runner::{describe, parse_seeds, run_for};
use payidem_sim::{run_seed, Bug};

struct Args {
    seed: Option<u64>,
    bug: Option<Bug>,
    trace: bool,
    seconds: f64,
    first_seed: Option<u64>,
    regressions: Option<String>,
    hunt: Option<Vec<Bug>>,
}

fn bug_named(name: &str) -> Result<Bug, String> {
    Bug::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        format!("unknown bug {name:?}; one of: {}", names.join(", "))
    })
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seed: None,
        bug: None,
        trace: false,
        seconds: 60.0,
        first_seed: None,
        regressions: None,
        hunt: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--seed" => args.seed = Some(value()?.parse().map_err(|e| format!("--seed: {e}"))?),
            "--bug" => args.bug = Some(bug_named(&value()?)?),
            "--trace" => args.trace = true,
            "--seconds" => {
                args.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?
            }
            "--first-seed" => {
                args.first_seed = Some(value()?.parse().map_err(|e| format!("--first-seed: {e}"))?)
            }
            "--regressions" => args.regressions = Some(value()?),
            "--hunt" => {
                let v = value()?;
                args.hunt = Some(if v == "all" {
                    Bug::ALL.to_vec()
                } else {
                    vec![bug_named(&v)?]
                });
            }
            "-h" | "--help" => {
                println!(
                    "{}",
                    include_str!("main.rs")
                        .lines()
                        .skip(2)
                        .take(6)
                        .map(|l| l.trim_start_matches("//! "))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("payidem-sim: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.seed {
        let started = Instant::now();
        let report = run_seed(seed, args.bug);
        println!(
            "seed {seed}: {} operations, {} calls, {} crashes, {} faults, {} events, {:.1} simulated hours in {:.2} s; trace {}",
            report.operations,
            report.calls,
            report.crashes,
            report.faults,
            report.events,
            report.simulated_ms as f64 / 3_600_000.0,
            started.elapsed().as_secs_f64(),
            report.trace_hash
        );
        if args.trace {
            if let Some(v) = &report.violation {
                for line in &v.trace {
                    println!("  {line}");
                }
            }
        }
        if report.violation.is_some() {
            print!("{}", describe(&report));
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let budget = Duration::from_secs_f64(args.seconds);
    if let Some(bugs) = args.hunt {
        let mut missed = 0;
        for bug in bugs {
            let first = args.first_seed.unwrap_or(1);
            let summary = run_for(&[], first, budget, Some(bug));
            match &summary.failure {
                Some(r) => println!(
                    "planted {}: found in {:.2} s (seed {}, {} seeds): {}",
                    bug.name(),
                    summary.real.as_secs_f64(),
                    r.seed,
                    summary.seeds,
                    r.violation.as_ref().map_or("", |v| v.what.as_str())
                ),
                None => {
                    missed += 1;
                    println!(
                        "planted {}: NOT FOUND in {:.2} s ({} seeds)",
                        bug.name(),
                        summary.real.as_secs_f64(),
                        summary.seeds
                    );
                }
            }
        }
        return if missed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let seeds = match &args.regressions {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => parse_seeds(&text),
            Err(e) => {
                eprintln!("payidem-sim: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
        None => Vec::new(),
    };
    let first = args.first_seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
            .wrapping_mul(1000)
    });
    println!(
        "payidem-sim: {} regression seeds, then seeds from {first} for {} s",
        seeds.len(),
        args.seconds
    );
    let summary = run_for(&seeds, first, budget, args.bug);
    let (ops, accel) = summary.rates();
    println!(
        "{:.0} simulated operations per real second, {:.0}x real time ({} events in {:.1} s)",
        ops,
        accel,
        summary.events,
        summary.real.as_secs_f64()
    );
    println!("{}", summary.line());
    if let Some(report) = &summary.failure {
        print!("{}", describe(report));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
