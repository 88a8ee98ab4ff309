//! weft-testkit: fixtures for weft's tests, kept out of the library crates (`publish =
//! false`; every user takes it as a dev-dependency, `weft-tests` as a dependency).
//!
//! - [`handmade`]: hand-built lowered kernels the emitters' tests (and the runtime's) use;
//! - [`random`]: deterministic random inputs;
//! - [`compare`]: an output's normalized error against its float64 reference;
//! - [`devices`]: the skip-or-fail rule of tests that need hardware (`WEFT_REQUIRE`):
//!   open a device or NVRTC, or skip with a printed reason.
//!
//! It depends on `weft-codegen-common` and `weft-runtime`, so for those crates (and the
//! emitters the runtime links) it is a dev-dependency cycle: usable from their `tests/`
//! folders, not from `#[cfg(test)]` unit tests in `src/`, whose crate is a second copy
//! whose types do not match.

pub mod compare;
pub mod devices;
pub mod handmade;
pub mod random;
