//! The planted-bug switches and fault points of the production code: each
//! is `false`, with nothing compiled, unless the `sim` feature is on (see
//! the `sim` module, which decides them for the simulator).

/// `true` where the simulator's `decide` function says so for this value
/// of `kind`; `false` (and nothing compiled) without the `sim` feature.
macro_rules! sim_switch {
    ($decide:ident, $kind:ident :: $value:ident) => {{
        #[cfg(feature = "sim")]
        let on = $crate::sim::$decide($crate::sim::$kind::$value);
        #[cfg(not(feature = "sim"))]
        let on = false;
        on
    }};
}

/// `true` where the simulator planted this bug; `false` (and nothing
/// compiled) without the `sim` feature.
macro_rules! planted {
    ($bug:ident) => {
        sim_switch!(planted, Bug::$bug)
    };
}

/// `true` where the simulator fires this fault point; `false` (and nothing
/// compiled) without the `sim` feature.
macro_rules! buggify {
    ($point:ident) => {
        sim_switch!(buggify, FaultPoint::$point)
    };
}
