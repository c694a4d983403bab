//! The orders a chaos run or the demo drives: deterministic from the prefix
//! and the index, so every process (and the final check) agrees on them.

/// One planned order: a payment, maybe declined, maybe partly refunded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedOrder {
    /// The order id, `{prefix}-{index:05}`.
    pub order_id: String,
    /// The payment's amount in cents.
    pub amount: u64,
    /// Whether the platform declines it (`amount % 1000 == 402`).
    pub declined: bool,
    /// The refund of the payment, if one is planned.
    pub refund: Option<u64>,
}

/// `orders` orders named `{prefix}-00000` onwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Order id prefix.
    pub prefix: String,
    /// How many orders.
    pub orders: usize,
}

impl Plan {
    /// The plan of `orders` orders under `prefix`.
    pub fn new(prefix: &str, orders: usize) -> Plan {
        Plan {
            prefix: prefix.to_owned(),
            orders,
        }
    }

    /// Order number `index`: one in ten is declined, one in three of the
    /// others gets half its amount refunded.
    pub fn order(&self, index: usize) -> PlannedOrder {
        let order_id = format!("{}-{index:05}", self.prefix);
        let i = index as u64;
        if index % 10 == 7 {
            return PlannedOrder {
                order_id,
                amount: (i % 50 + 1) * 1000 + 402,
                declined: true,
                refund: None,
            };
        }
        let mut amount = 1000 + (i * 7919) % 90_000;
        if amount % 1000 == 402 {
            amount += 1;
        }
        PlannedOrder {
            order_id,
            amount,
            declined: false,
            refund: index.is_multiple_of(3).then_some(amount / 2),
        }
    }

    /// Every order.
    pub fn all(&self) -> impl Iterator<Item = PlannedOrder> + '_ {
        (0..self.orders).map(|i| self.order(i))
    }

    /// Payments plus refunds planned.
    pub fn operations(&self) -> usize {
        self.orders + self.refunds()
    }

    /// Refunds planned.
    pub fn refunds(&self) -> usize {
        self.all().filter(|o| o.refund.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declines_are_exactly_the_402_amounts() {
        let plan = Plan::new("p", 1000);
        for o in plan.all() {
            assert_eq!(o.declined, o.amount % 1000 == 402, "{o:?}");
            assert!(!(o.declined && o.refund.is_some()));
        }
        assert_eq!(plan.all().filter(|o| o.declined).count(), 100);
        assert!(plan.refunds() > 250);
    }
}
