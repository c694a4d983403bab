//! A seed replays its run exactly, and the regression seeds pass.

use payidem_sim::run_seed;
use payidem_sim::runner::parse_seeds;

#[test]
fn a_seed_replays_exactly() {
    for seed in [3, 7] {
        let first = run_seed(seed, None);
        let again = run_seed(seed, None);
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed}");
        assert_eq!(first.events, again.events, "seed {seed}");
        assert_eq!(first.operations, again.operations, "seed {seed}");
        assert_eq!(first.simulated_ms, again.simulated_ms, "seed {seed}");
        assert!(
            first.events > 100,
            "seed {seed} ran only {} events",
            first.events
        );
    }
}

#[test]
fn seeds_make_different_worlds() {
    let a = run_seed(11, None);
    let b = run_seed(12, None);
    assert_ne!(a.trace_hash, b.trace_hash);
}

#[test]
fn the_regression_seeds_pass() {
    let text = include_str!("../regression-seeds.txt");
    let seeds = parse_seeds(text);
    assert!(seeds.len() >= 3);
    for seed in seeds {
        let report = run_seed(seed, None);
        assert!(
            report.violation.is_none(),
            "{}",
            payidem_sim::runner::describe(&report)
        );
        assert!(report.operations > 0);
    }
}

#[test]
fn a_seed_replays_exactly_in_another_process() {
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_payidem-sim"))
            .args(["--seed", "5"])
            .output()
            .expect("payidem-sim runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let first = run();
    let trace = |s: &str| s.split("trace ").nth(1).map(str::to_owned);
    assert!(
        trace(&first).is_some_and(|h| h.trim().len() == 64),
        "{first}"
    );
    assert_eq!(trace(&first), trace(&run()));
}
