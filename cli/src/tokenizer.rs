//! A checkpoint's tokenizer: `tokenizer.json` (Hugging Face's format) beside its
//! `config.json`, read by the `tokenizers` crate, so that `weft model generate DIR
//! --prompt TEXT` takes text and prints text (the ids the model reads and writes are
//! printed too).

use std::path::{Path, PathBuf};

use thiserror::Error;

/// The file a checkpoint directory keeps its tokenizer in.
pub const FILE: &str = "tokenizer.json";

/// What went wrong with a checkpoint's tokenizer, naming the file.
#[derive(Debug, Error)]
pub enum TokenizerError {
    /// `--prompt` given for a checkpoint without one.
    #[error(
        "`{}` not found: --prompt TEXT needs the checkpoint's tokenizer (or give --prompt-ids)",
        path.display()
    )]
    Missing { path: PathBuf },
    /// The file is not a tokenizer the `tokenizers` crate reads.
    #[error("`{}`: not a tokenizer weft can read: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    /// The text could not be encoded (or the ids decoded).
    #[error("`{}`: {reason}", path.display())]
    Coding { path: PathBuf, reason: String },
}

/// A loaded `tokenizer.json`.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
}

impl Tokenizer {
    /// The tokenizer of checkpoint directory `dir`, if it has one (`None` where the file
    /// is absent; an error where it is there but unreadable).
    pub fn open(dir: &Path) -> Result<Option<Tokenizer>, TokenizerError> {
        let path = dir.join(FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let inner =
            tokenizers::Tokenizer::from_file(&path).map_err(|e| TokenizerError::Unreadable {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Ok(Some(Tokenizer { inner, path }))
    }

    /// The tokenizer of `dir`, which `--prompt` needs.
    pub fn require(dir: &Path) -> Result<Tokenizer, TokenizerError> {
        Tokenizer::open(dir)?.ok_or_else(|| TokenizerError::Missing {
            path: dir.join(FILE),
        })
    }

    /// `text`'s ids, with the special tokens the tokenizer adds (Llama's `<s>`), as
    /// Hugging Face's `tokenizer(text)` gives them.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let encoding = self
            .inner
            .encode(text, true)
            .map_err(|e| self.coding(format!("cannot encode the prompt: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text of `ids`, special tokens left out.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        self.inner
            .decode(ids, true)
            .map_err(|e| self.coding(format!("cannot decode the generated ids: {e}")))
    }

    fn coding(&self, reason: String) -> TokenizerError {
        TokenizerError::Coding {
            path: self.path.clone(),
            reason,
        }
    }
}
