//! ONNX import and export for weft graphs.
//!
//! [`load`] / [`from_bytes`] read an ONNX model (opsets 7 to 23 of the default domain)
//! into a [`weft_graph::Graph`], with shapes re-inferred by weft and every refusal a
//! typed [`ImportError`] naming the op, node, tensor or dimension at fault. [`save`] /
//! [`to_bytes`] write a graph back as an opset-17 model (higher only where an op needs it).
//! The protobuf messages are in [`proto`], generated once with prost and checked in.
//!
//! ```no_run
//! use std::path::Path;
//! use weft_onnx::{ImportOptions, load};
//!
//! let opts = ImportOptions { batch: Some(1), ..ImportOptions::default() };
//! let graph = load(Path::new("resnet50.onnx"), &opts)?;
//! println!("{graph}");
//! # Ok::<(), weft_onnx::ImportError>(())
//! ```

mod error;
mod export;
mod import;
pub mod proto;
pub mod versions;

pub use error::{ExportError, ImportError};
pub use export::{EXPORT_OPSET, save, to_bytes, to_model};
pub use import::cache::CacheOptions;
pub use import::tensor::{Const, ConstData, tensor_to_array, tensor_to_const};
pub use import::{ImportOptions, from_bytes, from_model, load};
