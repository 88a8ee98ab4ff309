//! The CPU interpreter on hand-built kernels: results against independent references on
//! random inputs (outputs start poisoned), and one test per error kind.

mod builders;
mod errors;
mod results;
mod semaphore;
mod values;
