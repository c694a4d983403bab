//! The shape of one run, drawn from its seed: how many instances and
//! orders, how long the faults last, and how often each fault strikes.

use crate::rng::Dice;

/// How one run is shaped.
#[derive(Clone, Debug)]
pub struct Profile {
    pub instances: usize,
    pub orders: u64,
    /// Milliseconds between two new orders (least, most).
    pub order_gap_ms: (u64, u64),
    /// Milliseconds an idle instance waits before looking for work.
    pub idle_ms: (u64, u64),
    /// How long the faults last (then the world must settle).
    pub fault_ms: u64,
    /// A platform outage (start, end), in simulated milliseconds.
    pub outage: Option<(u64, u64)>,
    pub status_path_share: f64,
    pub lease_ttl_secs: u64,
    /// The largest clock skew of an instance at the start, seconds.
    pub max_skew: u64,
    pub not_sent: f64,
    pub lost: f64,
    pub cut: f64,
    pub duplicate: f64,
    pub delay: f64,
    pub corrupt: f64,
    pub partial: f64,
    pub platform_fault: f64,
    pub slow_commit: f64,
    /// Mean milliseconds between crashes of one instance (0: never).
    pub crash_every_ms: u64,
    pub down_max_ms: u64,
    pub clock_step_every_ms: u64,
    pub power_loss_every_ms: u64,
    pub fsync_fault_every_ms: u64,
    /// The chance that an unsynced row write survives a power loss.
    pub torn_keep: f64,
    /// The chance that a fault point fires.
    pub buggify: f64,
}

const HOUR_MS: u64 = 3_600_000;

impl Profile {
    /// A profile drawn from `dice`.
    pub fn draw(dice: &mut Dice) -> Profile {
        let rate = |dice: &mut Dice, most: u64| dice.range(0, most) as f64 / 1000.0;
        let long = dice.chance(0.3);
        let fault_ms = if long {
            dice.range(52, 80) * HOUR_MS
        } else {
            dice.range(1, 12) * HOUR_MS
        };
        let outage = long.then(|| {
            let start = dice.range(1, 3) * HOUR_MS;
            (start, start + dice.range(48, 50) * HOUR_MS)
        });
        let orders = dice.range(20, 120);
        let gap = (fault_ms / orders / 4).max(1000);
        Profile {
            instances: dice.range(2, 5) as usize,
            orders,
            order_gap_ms: (1, gap),
            idle_ms: (5_000, 120_000),
            fault_ms,
            outage,
            status_path_share: dice.pick(&[0.0, 0.5, 0.8, 1.0]),
            lease_ttl_secs: dice.pick(&[5, 15, 30, 120]),
            max_skew: dice.pick(&[0, 20, 120, 280]),
            not_sent: rate(dice, 100),
            lost: rate(dice, 100),
            cut: rate(dice, 150),
            duplicate: rate(dice, 100),
            delay: rate(dice, 50),
            corrupt: rate(dice, 30),
            partial: rate(dice, 30),
            platform_fault: rate(dice, 300),
            slow_commit: rate(dice, 100),
            crash_every_ms: dice.pick(&[0, 600_000, 3_600_000]),
            down_max_ms: dice.pick(&[5_000, 120_000, 1_800_000]),
            clock_step_every_ms: dice.pick(&[0, 1_800_000, 7_200_000]),
            power_loss_every_ms: dice.pick(&[0, 3_600_000, 14_400_000]),
            fsync_fault_every_ms: dice.pick(&[0, 600_000, 3_600_000]),
            torn_keep: dice.pick(&[0.0, 0.5, 0.9]),
            buggify: dice.pick(&[0.0, 0.01, 0.05]),
        }
    }
}
