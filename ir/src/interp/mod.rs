//! The CPU interpreter of lowered kernels (being written; see issue 2, point 8).
