//! How big a zoo model runs where no size is given: small on a CPU (the interpreter,
//! llvmpipe, lavapipe), so that `weft model run zoo:NAME` and `weft model check` take
//! seconds there. Its own module so that both commands use it without importing each other.

use weft_graph::zoo;

use crate::args::SizeClass;
use crate::model_args::{LlamaArgs, ModelSource};
use crate::select::Opened;

/// The resolution a zoo CNN and the sequence a zoo transformer run at on a CPU (the
/// interpreter, llvmpipe, lavapipe) when no size is given: seconds, not minutes.
const CPU_RESOLUTION: usize = 64;
const CPU_SEQ: u32 = 16;

/// `source` as it runs on `opened`: a zoo model without a size given runs small on a
/// CPU; the line says so (`None`: as given).
pub(super) fn sized_for(source: &ModelSource, opened: &Opened) -> (ModelSource, Option<String>) {
    let mut sized = source.clone();
    let Some(name) = source.model.strip_prefix("zoo:") else {
        return (sized, None);
    };
    if opened.size != SizeClass::Small {
        return (sized, None);
    }
    let why = "on a CPU";
    if name == "llama" && source.llama.given().is_empty() {
        // TinyLlama's 1.1G weights take the interpreter minutes a token: a small model of
        // its shape instead (grouped KV heads, the same code), unless a size is given.
        sized.llama = LlamaArgs {
            layers: Some(2),
            hidden: Some(256),
            heads: Some(8),
            kv_heads: Some(2),
            intermediate: Some(512),
            vocab: Some(1000),
            ..source.llama
        };
        sized.seq = Some(source.seq.unwrap_or(CPU_SEQ));
        let line = format!(
            "{} tokens, 2 layers of 256 (8 heads over 2 KV heads, MLP 512, vocabulary 1000) {why}; \
             TinyLlama-1.1B's sizes elsewhere, or give --layers, --hidden, --heads, \
             --kv-heads, --intermediate or --vocab",
            source.seq.map_or(CPU_SEQ as usize, |s| s as usize)
        );
        return (sized, Some(line));
    }
    if zoo::takes_tokens(name) {
        // `--dim seq=...` sizes the sequence itself.
        if source.seq.is_some() || !source.dim.is_empty() {
            return (sized, None);
        }
        sized.seq = Some(CPU_SEQ);
        let line = format!(
            "{CPU_SEQ} tokens {why} (`--seq 128`, the default elsewhere, for the full size)"
        );
        return (sized, Some(line));
    }
    let (Ok(own), Ok(least)) = (zoo::default_resolution(name), zoo::min_resolution(name)) else {
        return (sized, None);
    };
    if source.resolution.is_some() {
        return (sized, None);
    }
    let r = CPU_RESOLUTION.max(least);
    sized.resolution = Some(r as u32);
    let line = format!("{r}x{r} {why} (`--resolution {own}` for the full size)");
    (sized, Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_args::ModelDType;
    use crate::select;
    use weft_runtime::WgpuOptions;

    fn source(model: &str) -> ModelSource {
        ModelSource {
            model: model.to_string(),
            batch: 1,
            resolution: None,
            seq: None,
            dtype: ModelDType::F32,
            disable_pass: Vec::new(),
            dim: Vec::new(),
            llama: Default::default(),
        }
    }

    #[test]
    fn zoo_models_run_small_on_a_cpu_unless_a_size_is_given() {
        let cpu = select::open_str("cpu", WgpuOptions::default()).unwrap();
        let (s, line) = sized_for(&source("zoo:resnet50"), &cpu);
        assert_eq!(s.resolution, Some(64));
        assert!(line.unwrap().contains("--resolution 224"));
        // Inception v3 takes no less than 75.
        let (s, _) = sized_for(&source("zoo:inception_v3"), &cpu);
        assert_eq!(s.resolution, Some(75));
        let (s, line) = sized_for(&source("zoo:bert_base"), &cpu);
        assert_eq!((s.seq, s.resolution), (Some(CPU_SEQ), None));
        assert!(line.unwrap().contains("--seq 128"));
        // A size given, or a file, runs as given.
        let given = ModelSource {
            resolution: Some(32),
            ..source("zoo:resnet50")
        };
        let (s, line) = sized_for(&given, &cpu);
        assert_eq!((s.resolution, line), (Some(32), None));
        // zoo:llama runs a small model of its shape, unless a size is given.
        let (s, line) = sized_for(&source("zoo:llama"), &cpu);
        assert_eq!(
            (s.llama.layers, s.llama.hidden, s.seq),
            (Some(2), Some(256), Some(CPU_SEQ))
        );
        assert!(line.unwrap().contains("TinyLlama-1.1B's sizes elsewhere"));
        let given = ModelSource {
            llama: LlamaArgs {
                layers: Some(3),
                ..LlamaArgs::default()
            },
            ..source("zoo:llama")
        };
        let (s, _) = sized_for(&given, &cpu);
        assert_eq!((s.llama.layers, s.llama.hidden), (Some(3), None));
        let (s, line) = sized_for(&source("model.onnx"), &cpu);
        assert_eq!((s.resolution, s.seq, line), (None, None, None));
    }
}
