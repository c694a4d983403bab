//! The ABI's vocabulary: every public enum of payidem is declared once,
//! with [`vocabulary!`], together with its table — each value's stable
//! lower-case name and stable number. The C ABI's enums carry these numbers
//! and its name functions answer these names (a test in the C crate checks
//! every C enum of the header against these tables); Go reads the names
//! through the C name functions and Python reads them from here.

use std::ffi::CStr;

/// A public enum whose every value has a stable name and a stable number.
/// A name or number is never changed or reused; values may be added.
pub trait Vocabulary: Copy + Eq + 'static {
    /// Every value, in number order.
    const VALUES: &'static [Self];

    /// The stable lower-case name, the same in every binding.
    fn name(self) -> &'static str;

    /// The same name as a static NUL-terminated string (for the C ABI).
    fn c_name(self) -> &'static CStr;

    /// The stable number: the value of the C ABI's enum constant.
    fn number(self) -> u32;

    /// The value with this name, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES.iter().copied().find(|v| v.name() == name)
    }

    /// The value with this number, if any.
    fn from_number(number: u32) -> Option<Self> {
        Self::VALUES.iter().copied().find(|v| v.number() == number)
    }
}

/// Declares a public enum and its table in one place: each variant is
/// written `Variant = number => "name",`. The enum gets `Clone, Copy,
/// Debug, PartialEq, Eq, Hash`, the inherent `ALL` (every value, in the
/// order written, which is number order), `as_str`, `c_name`, `number`,
/// `from_name` and `from_number`, and the [`Vocabulary`] trait.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident {
            $(
                $(#[$vmeta:meta])*
                $Variant:ident = $number:literal => $name:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $Name {
            $(
                $(#[$vmeta])*
                $Variant,
            )+
        }

        impl $Name {
            /// Every value, in number order.
            pub const ALL: [$Name; [$($number),+].len()] = [$($Name::$Variant),+];

            /// The stable lower-case name, the same in every binding.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($Name::$Variant => $name,)+
                }
            }

            /// The same name as a static NUL-terminated string.
            pub const fn c_name(self) -> &'static ::std::ffi::CStr {
                match self {
                    $($Name::$Variant => {
                        const NAME: &::std::ffi::CStr = match ::std::ffi::CStr::from_bytes_with_nul(
                            concat!($name, "\0").as_bytes(),
                        ) {
                            Ok(name) => name,
                            Err(_) => panic!("a name holds a NUL byte"),
                        };
                        NAME
                    })+
                }
            }

            /// The stable number: the value of the C ABI's enum constant.
            pub const fn number(self) -> u32 {
                match self {
                    $($Name::$Variant => $number,)+
                }
            }

            /// The value with this stable name, if any.
            pub fn from_name(name: &str) -> Option<$Name> {
                $Name::ALL.into_iter().find(|v| v.as_str() == name)
            }

            /// The value with this stable number, if any.
            pub fn from_number(number: u32) -> Option<$Name> {
                $Name::ALL.into_iter().find(|v| v.number() == number)
            }
        }

        impl $crate::vocabulary::Vocabulary for $Name {
            const VALUES: &'static [$Name] = &$Name::ALL;

            fn name(self) -> &'static str {
                self.as_str()
            }

            fn c_name(self) -> &'static ::std::ffi::CStr {
                $Name::c_name(self)
            }

            fn number(self) -> u32 {
                $Name::number(self)
            }
        }
    };
}

pub(crate) use vocabulary;

/// One table of the vocabulary as plain data: the C enum it numbers, and
/// every value's name and number. Lets a test or a binding walk every table
/// without naming each enum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The C ABI's enum type (`payidem_operation_state`, ...).
    pub c_type: &'static str,
    /// The common prefix of the C enum's constants (`PAYIDEM_STATE_`).
    pub c_prefix: &'static str,
    /// Every value's (name, number), in number order.
    pub values: Vec<(&'static str, u32)>,
}

impl Table {
    fn of<T: Vocabulary>(c_type: &'static str, c_prefix: &'static str) -> Table {
        Table {
            c_type,
            c_prefix,
            values: T::VALUES.iter().map(|v| (v.name(), v.number())).collect(),
        }
    }
}

/// Every table of the vocabulary that the C ABI numbers, with the C enum
/// and constant prefix each one's numbers appear under.
pub fn tables() -> Vec<Table> {
    use crate::operation::{AttemptKind, NextAction, OperationState, ReplyKind, StepKind};
    use crate::policy::{DecisionKind, Landed};
    vec![
        Table::of::<crate::ErrorCode>("payidem_result", "PAYIDEM_"),
        Table::of::<OperationState>("payidem_operation_state", "PAYIDEM_STATE_"),
        Table::of::<AttemptKind>("payidem_attempt_kind", "PAYIDEM_ATTEMPT_KIND_"),
        Table::of::<NextAction>("payidem_next_action", "PAYIDEM_NEXT_"),
        Table::of::<Landed>("payidem_landed", "PAYIDEM_LANDED_"),
        Table::of::<DecisionKind>("payidem_decision_kind", "PAYIDEM_DECISION_"),
        Table::of::<StepKind>("payidem_step_type", "PAYIDEM_STEP_"),
        Table::of::<ReplyKind>("payidem_attempt_outcome", "PAYIDEM_ATTEMPT_"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_table_has_unique_names_and_numbers_in_order() {
        for table in tables() {
            let names: HashSet<&str> = table.values.iter().map(|(n, _)| *n).collect();
            assert_eq!(names.len(), table.values.len(), "{}", table.c_type);
            let numbers: Vec<u32> = table.values.iter().map(|(_, n)| *n).collect();
            let mut sorted = numbers.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(numbers, sorted, "{}: ALL is in number order", table.c_type);
            for (name, _) in &table.values {
                assert!(
                    name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{}: {name}",
                    table.c_type
                );
            }
        }
    }

    #[test]
    fn names_and_numbers_round_trip() {
        fn check<T: Vocabulary + std::fmt::Debug>() {
            for &v in T::VALUES {
                assert_eq!(T::from_name(v.name()), Some(v));
                assert_eq!(T::from_number(v.number()), Some(v));
                assert_eq!(v.c_name().to_str(), Ok(v.name()));
            }
            assert_eq!(T::from_name("no_such_name"), None);
        }
        check::<crate::ErrorCode>();
        check::<crate::operation::OperationState>();
        check::<crate::operation::EndKind>();
        check::<crate::policy::DecisionKind>();
        check::<crate::policy::Landed>();
        check::<crate::client::CallStepKind>();
        check::<crate::operation::StepKind>();
        check::<crate::operation::ReplyKind>();
    }
}
