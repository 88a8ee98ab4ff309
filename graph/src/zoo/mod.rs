//! Built-in models with seeded random weights: BERT-base and GPT-2 (see [`transformer`]),
//! a Llama-family decoder, TinyLlama-1.1B's sizes by default (see [`llama`]),
//! and torchvision's ResNet-50, Inception v3 and MobileNetV2, layer for layer as `torch.onnx.export` writes them in eval mode before any
//! folding (Conv without bias → BatchNormalization → Relu, ReLU6 as `Clip(0, 6)`,
//! residual `Add`, adaptive average pooling as `GlobalAveragePool`, `Flatten`, the
//! classifier as `Gemm` with `transB`; dropout left out), so weft can compile and time
//! whole models without downloading any.
//!
//! Nodes and weights take torchvision's module names (`layer1.0.conv1`,
//! `layer1.0.conv1.weight`, `layer1.0.bn1.running_var`); the input is `input`, f32
//! `[batch, 3, resolution, resolution]`, the output `logits`, f32 `[batch, classes]`.
//! The weights are random, but each batch norm's running statistics are set near the
//! mean and variance its input is expected to have, as a trained network's are, so every
//! activation stays about unit scale and fp16 runs neither overflow nor drown in
//! rounding.
//!
//! ```
//! use weft_graph::zoo::{self, ZooOptions};
//!
//! let opts = ZooOptions { resolution: 96, ..ZooOptions::mobilenet_v2() };
//! let g = zoo::build("mobilenet_v2", &opts).unwrap();
//! assert_eq!(g.tensor(g.outputs[0]).shape, [1, 1000]);
//! ```

mod inception;
pub mod llama;
pub mod llama_step;
mod mobilenet;
mod net;
mod resnet;
pub mod transformer;

use thiserror::Error;

use crate::graph::{Graph, GraphError};

/// The models [`build`] knows.
pub const NAMES: &[&str] = &[
    "resnet50",
    "inception_v3",
    "mobilenet_v2",
    "bert_base",
    "gpt2",
    "llama",
];

/// A model of the zoo, by its name in [`NAMES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Model {
    ResNet50,
    InceptionV3,
    MobileNetV2,
    BertBase,
    Gpt2,
    Llama,
}

impl Model {
    /// Its name in [`NAMES`].
    fn name(self) -> &'static str {
        match self {
            Model::ResNet50 => "resnet50",
            Model::InceptionV3 => "inception_v3",
            Model::MobileNetV2 => "mobilenet_v2",
            Model::BertBase => "bert_base",
            Model::Gpt2 => "gpt2",
            Model::Llama => "llama",
        }
    }

    /// The transformer's configuration, `None` for the CNNs.
    fn transformer(self) -> Option<transformer::TransformerConfig> {
        match self {
            Model::BertBase => Some(transformer::TransformerConfig::bert_base()),
            Model::Gpt2 => Some(transformer::TransformerConfig::gpt2()),
            Model::ResNet50 | Model::InceptionV3 | Model::MobileNetV2 | Model::Llama => None,
        }
    }
}

/// What to build: the input's batch and square resolution, the weights' seed and the
/// classifier's classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZooOptions {
    pub batch: usize,
    /// Height and width of the input image.
    pub resolution: usize,
    /// The same seed gives the same weights: the draws (ChaCha, through `rand`'s
    /// `StdRng`) are the same on every platform; the running statistics derived from
    /// them are computed in f64 and rounded to f32, which in practice hides the
    /// last-bit differences of platforms' `exp`.
    pub seed: u64,
    pub classes: usize,
    /// Tokens per sequence (the transformers and `llama`; the CNNs ignore it).
    pub seq: usize,
}

impl ZooOptions {
    /// ResNet-50 as torchvision trains it: 224², 1000 classes, batch 1, seed 0.
    pub fn resnet50() -> ZooOptions {
        ZooOptions::imagenet(224)
    }

    /// Inception v3 as torchvision trains it: 299², 1000 classes, batch 1, seed 0.
    pub fn inception_v3() -> ZooOptions {
        ZooOptions::imagenet(299)
    }

    /// MobileNetV2 as torchvision trains it: 224², 1000 classes, batch 1, seed 0.
    pub fn mobilenet_v2() -> ZooOptions {
        ZooOptions::imagenet(224)
    }

    /// The defaults of the model `name`.
    pub fn for_model(name: &str) -> Result<ZooOptions, ZooError> {
        Ok(ZooOptions::imagenet(default_resolution(name)?))
    }

    fn imagenet(resolution: usize) -> ZooOptions {
        ZooOptions {
            batch: 1,
            resolution,
            seed: 0,
            classes: 1000,
            seq: 128,
        }
    }
}

/// Why a model could not be built.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum ZooError {
    /// No model of that name.
    #[error("no model `{name}` in the zoo; it has {}", known.join(", "))]
    Unknown {
        name: String,
        known: Vec<&'static str>,
    },
    /// The image is too small for the model's strided layers to leave anything.
    #[error("{model} needs a resolution of at least {minimum}, not {resolution}")]
    ResolutionTooSmall {
        model: &'static str,
        resolution: usize,
        minimum: usize,
    },
    /// A batch of 0.
    #[error("the batch must be at least 1")]
    ZeroBatch,
    /// A sequence of 0 tokens, or longer than the model's position embedding.
    #[error("{model} takes sequences of 1 to {max} tokens, not {seq}")]
    BadSeq {
        model: &'static str,
        seq: usize,
        max: usize,
    },
    /// A classifier of 0 classes.
    #[error("the classifier needs at least 1 class")]
    ZeroClasses,
    /// Sizes that make no model (`zoo:llama`'s configuration).
    #[error("{model}: {reason}")]
    BadConfig { model: &'static str, reason: String },
    /// The graph did not build (a bug in the zoo: the options were checked first).
    #[error("building {model}: {source}")]
    Graph {
        model: &'static str,
        source: GraphError,
    },
}

/// The model `name` (one of [`NAMES`]) with weights drawn from `opts.seed`.
pub fn build(name: &str, opts: &ZooOptions) -> Result<Graph, ZooError> {
    let which = canonical(name)?;
    let model = which.name();
    if opts.batch == 0 {
        return Err(ZooError::ZeroBatch);
    }
    if opts.classes == 0 {
        return Err(ZooError::ZeroClasses);
    }
    let minimum = min_resolution(model)?;
    if opts.resolution < minimum {
        return Err(ZooError::ResolutionTooSmall {
            model,
            resolution: opts.resolution,
            minimum,
        });
    }
    let built = match which {
        Model::ResNet50 => resnet::resnet50(opts),
        Model::InceptionV3 => inception::inception_v3(opts),
        Model::MobileNetV2 => mobilenet::mobilenet_v2(opts),
        Model::BertBase | Model::Gpt2 => {
            let cfg = which.transformer().ok_or(ZooError::Unknown {
                name: name.to_string(),
                known: NAMES.to_vec(),
            })?;
            if opts.seq == 0 || opts.seq > cfg.max_positions {
                return Err(ZooError::BadSeq {
                    model,
                    seq: opts.seq,
                    max: cfg.max_positions,
                });
            }
            transformer::transformer(model, &cfg, opts.batch, opts.seq, opts.seed)
        }
        Model::Llama => {
            let cfg = llama::LlamaConfig::tiny_llama();
            return build_llama(&cfg, opts);
        }
    };
    built.map_err(|source| ZooError::Graph { model, source })
}

/// `zoo:llama` of the sizes `cfg`, on `opts.batch` sequences of `opts.seq` tokens, its
/// weights drawn from `opts.seed`.
pub fn build_llama(cfg: &llama::LlamaConfig, opts: &ZooOptions) -> Result<Graph, ZooError> {
    let model = "llama";
    if opts.batch == 0 {
        return Err(ZooError::ZeroBatch);
    }
    if opts.seq == 0 || opts.seq > cfg.max_positions {
        return Err(ZooError::BadSeq {
            model,
            seq: opts.seq,
            max: cfg.max_positions,
        });
    }
    let mut seeded = llama::Seeded(opts.seed);
    llama::llama(model, cfg, opts.batch, opts.seq, &mut seeded).map_err(|e| match e {
        llama::LlamaError::Config(reason) => ZooError::BadConfig { model, reason },
        llama::LlamaError::Graph(source) => ZooError::Graph { model, source },
        llama::LlamaError::Shape { name, .. } => ZooError::BadConfig {
            model,
            reason: format!("weight `{name}` drawn in the wrong shape"),
        },
        llama::LlamaError::Weights(never) => match never {},
    })
}

/// Whether the zoo model `name` takes token ids and a `--seq` (the transformers and
/// `llama`), rather than images.
pub fn takes_tokens(name: &str) -> bool {
    canonical(name).is_ok_and(|m| m.transformer().is_some() || m == Model::Llama)
}

/// A generator for the weight `name` of a model seeded with `seed`: FNV-1a over the
/// seed's bytes and the name (stable across platforms and versions, unlike `std`'s
/// hasher), so a weight depends on neither the batch, the input size nor the order the
/// layers are built in.
pub(crate) fn weight_rng(seed: u64, name: &str) -> rand::rngs::StdRng {
    use rand::SeedableRng;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in seed.to_le_bytes().iter().chain(name.as_bytes()) {
        h ^= u64::from(*byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    rand::rngs::StdRng::seed_from_u64(h)
}

/// The configuration of a zoo transformer, `None` for the CNNs.
pub fn transformer_config(name: &str) -> Option<transformer::TransformerConfig> {
    canonical(name).ok()?.transformer()
}

/// The resolution the model was designed for (224, or 299 for Inception v3).
pub fn default_resolution(name: &str) -> Result<usize, ZooError> {
    Ok(match canonical(name)? {
        Model::InceptionV3 => 299,
        Model::ResNet50 | Model::MobileNetV2 | Model::BertBase | Model::Gpt2 | Model::Llama => 224,
    })
}

/// The smallest resolution the model takes: every strided layer must leave at least
/// one pixel. ResNet-50 and MobileNetV2 pad every strided layer, so any image will do;
/// Inception v3 has unpadded ones (torchvision says 75 too).
pub fn min_resolution(name: &str) -> Result<usize, ZooError> {
    Ok(match canonical(name)? {
        Model::InceptionV3 => 75,
        Model::ResNet50 | Model::MobileNetV2 | Model::BertBase | Model::Gpt2 | Model::Llama => 1,
    })
}

/// `name` as the `'static` entry of [`NAMES`], or the error listing them.
fn canonical(name: &str) -> Result<Model, ZooError> {
    [
        Model::ResNet50,
        Model::InceptionV3,
        Model::MobileNetV2,
        Model::BertBase,
        Model::Gpt2,
        Model::Llama,
    ]
    .into_iter()
    .find(|m| m.name() == name)
    .ok_or_else(|| ZooError::Unknown {
        name: name.to_string(),
        known: NAMES.to_vec(),
    })
}

#[cfg(test)]
mod llama_tests;
#[cfg(test)]
mod tests;
