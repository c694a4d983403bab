//! The planted-bug switches and fault points of the production code: each
//! is `false`, with nothing compiled, unless the `sim` feature is on (see
//! the `sim` module, which decides them for the simulator).

/// `true` where the simulator planted this bug; `false` (and nothing
/// compiled) without the `sim` feature.
macro_rules! planted {
    ($bug:ident) => {{
        #[cfg(feature = "sim")]
        let on = $crate::sim::planted($crate::sim::Bug::$bug);
        #[cfg(not(feature = "sim"))]
        let on = false;
        on
    }};
}

/// `true` where the simulator fires this fault point; `false` (and nothing
/// compiled) without the `sim` feature.
macro_rules! buggify {
    ($point:ident) => {{
        #[cfg(feature = "sim")]
        let on = $crate::sim::buggify($crate::sim::FaultPoint::$point);
        #[cfg(not(feature = "sim"))]
        let on = false;
        on
    }};
}
