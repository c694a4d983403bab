//! Core values into the C enums that carry their numbers. Every C enum's
//! constants are the core vocabulary's numbers (`tests/vocabulary.rs`
//! checks the header against the core tables), so a value converts by its
//! number: no table pairs core variants with C constants.

use payidem::vocabulary::Vocabulary;

/// A `#[repr(u32)]` C enum whose constants are numbered as the core's
/// vocabulary table `Core` numbers its values.
pub(crate) trait CEnum: Copy + 'static {
    /// The core enum this C enum carries.
    type Core: Vocabulary;
    /// Every constant of the C enum.
    const CONSTANTS: &'static [Self];
    /// The constant's number (its discriminant).
    fn number(self) -> u32;
}

/// `impl CEnum` for a C enum: `carries!(c_enum: Core => CONSTANT, ...)`.
macro_rules! carries {
    ($c:ident: $core:ty => $($constant:ident),+ $(,)?) => {
        impl $crate::base::vocabulary::CEnum for $c {
            type Core = $core;
            const CONSTANTS: &'static [Self] = &[$($c::$constant),+];
            fn number(self) -> u32 {
                self as u32
            }
        }
    };
}
pub(crate) use carries;

/// The C constant numbered as `value`. Every core value has one (checked
/// by `tests/vocabulary.rs` and this module's test); were one missing, the
/// first constant stands in rather than a panic inside a callback.
pub(crate) fn c_enum<C: CEnum>(value: C::Core) -> C {
    let number = value.number();
    C::CONSTANTS
        .iter()
        .copied()
        .find(|c| c.number() == number)
        .unwrap_or(C::CONSTANTS[0])
}

/// The core value a C constant carries, if its number is one.
pub(crate) fn core_of<C: CEnum>(constant: C) -> Option<C::Core> {
    C::Core::from_number(constant.number())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::enums::{
        payidem_attempt_kind, payidem_decision_kind, payidem_landed, payidem_next_action,
        payidem_operation_state,
    };

    fn round_trips<C: CEnum>() {
        for &value in C::Core::VALUES {
            let constant: C = c_enum(value);
            assert_eq!(constant.number(), value.number());
            assert!(core_of(constant) == Some(value));
        }
    }

    #[test]
    fn every_core_value_has_its_constant() {
        round_trips::<payidem_attempt_kind>();
        round_trips::<payidem_next_action>();
        round_trips::<payidem_operation_state>();
        round_trips::<payidem_landed>();
        round_trips::<payidem_decision_kind>();
    }
}
