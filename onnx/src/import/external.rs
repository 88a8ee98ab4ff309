//! Initializers whose bytes live in a file beside the model (ONNX's external data:
//! `data_location` EXTERNAL, `external_data` entries `location`, `offset`, `length`).
//! Every model past protobuf's 2 GB — any language model of a billion parameters — is
//! written so (`onnx.save(..., save_as_external_data=True)`, optimum's `model.onnx_data`).
//!
//! The location is a path relative to the model's folder, within it: an absolute path,
//! a `..` or a prefix is refused (as ONNX's checker refuses them), so a model names no
//! file outside its folder. The bytes are read only after `offset + length` is checked
//! against the file's length; the element count against the tensor's dims is checked
//! where the bytes are decoded, as for `raw_data`.

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use crate::error::ImportError;
use crate::proto::TensorProto;
use crate::proto::tensor_proto::DataLocation;

/// `t` with its external bytes read into `raw_data` from beside the model in `dir`;
/// `t` itself where its data is inline. Without a folder (a model given as bytes) an
/// external tensor is refused.
pub(super) fn resolve<'t>(
    t: &'t TensorProto,
    dir: Option<&Path>,
) -> Result<Cow<'t, TensorProto>, ImportError> {
    if t.data_location != DataLocation::External as i32 && t.external_data.is_empty() {
        return Ok(Cow::Borrowed(t));
    }
    let Some(dir) = dir else {
        return Err(ImportError::ExternalData(t.name.clone()));
    };
    let err = |what: String| ImportError::Tensor {
        tensor: t.name.clone(),
        what,
    };
    let entry = |key: &str| {
        t.external_data
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    };
    let location =
        entry("location").ok_or_else(|| err("its external data names no `location`".into()))?;
    let inside = Path::new(location)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if location.is_empty() || !inside {
        return Err(err(format!(
            "its external data is at `{location}`: weft reads external data only from a path inside the model's folder"
        )));
    }
    let number = |key: &str| -> Result<Option<u64>, ImportError> {
        entry(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    err(format!(
                        "its external data's `{key}` is `{v}`, not a byte count"
                    ))
                })
            })
            .transpose()
    };
    let (offset, length) = (number("offset")?.unwrap_or(0), number("length")?);
    let path = dir.join(location);
    let read = || -> std::io::Result<Vec<u8>> {
        let mut file = std::fs::File::open(&path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "it is not a regular file",
            ));
        }
        let size = meta.len();
        let length = length.unwrap_or(size.saturating_sub(offset));
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{length} bytes at offset {offset} run past its end ({size} bytes)"),
            ));
        }
        let length = usize::try_from(length).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "too long to hold")
        })?;
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = vec![0; length];
        file.read_exact(&mut bytes)?;
        Ok(bytes)
    };
    let bytes = read().map_err(|e| {
        err(format!(
            "its external data cannot be read from {}: {e}",
            path.display()
        ))
    })?;
    let mut inline = t.clone();
    inline.raw_data = bytes;
    inline.external_data.clear();
    inline.data_location = DataLocation::Default as i32;
    Ok(Cow::Owned(inline))
}
