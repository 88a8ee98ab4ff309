//! What identifies an anchor (a convolution or product on a matmul template) and what
//! can be chosen for it: the key lowering reports ([`AnchorKey`]: the template, the
//! product's sizes and the [`Views`] its operands are read through), the config and
//! split parts a tuning run or a record chooses, and the choices lowering takes before
//! its stated rule. A tuning record names an anchor by the key's text (its schedule is
//! the template's name, its shape the key), which [`AnchorKey::parse`] reads back.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use weft_kernels::Config;

/// The most parts a reduction is split into (the rule's bound, which records obey too).
pub use weft_kernels::rule::MAX_SPLITS;

/// The template an anchor runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnchorTemplate {
    /// The fp32 matmul template (CUDA cores; no TF32).
    Matmul,
    /// The fp16 matmul template (matrix units where the target has them, f32 sums).
    MatmulF16,
}

impl AnchorTemplate {
    /// Every template, for reading a record's schedule back.
    pub const ALL: [AnchorTemplate; 2] = [AnchorTemplate::Matmul, AnchorTemplate::MatmulF16];

    /// The template's name, as tuning records name the schedule.
    pub fn name(self) -> &'static str {
        match self {
            AnchorTemplate::Matmul => "matmul",
            AnchorTemplate::MatmulF16 => "matmul_f16",
        }
    }

    /// The template a record's schedule names, if any.
    pub fn from_name(name: &str) -> Option<AnchorTemplate> {
        AnchorTemplate::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// How a convolution's input is laid out where the implicit GEMM reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvInput {
    /// NCHW, read where it is stored.
    Nchw,
    /// NHWC (channels last), read where it is stored.
    Nhwc,
    /// A narrow NCHW input (a stem reading the image) copied first into a padded NHWC
    /// buffer of four channels by a kernel of its own.
    Nhwc4Copy,
}

impl ConvInput {
    fn text(self) -> &'static str {
        match self {
            ConvInput::Nchw => "NCHW",
            ConvInput::Nhwc => "NHWC",
            ConvInput::Nhwc4Copy => "NHWC4 copy",
        }
    }
}

/// A convolution's geometry as its implicit GEMM reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvViews {
    /// The input `[N, C, H, W]` (C as the GEMM reads it: 4 after a narrow copy).
    pub x: [i64; 4],
    /// The filter `[K, C/groups, R, S]`.
    pub w: [i64; 4],
    pub strides: [usize; 2],
    /// Top, left, bottom, right.
    pub pads: [usize; 4],
    pub dilations: [usize; 2],
    pub input: ConvInput,
}

/// What an anchor's operands are read through: part of what its kernel depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Views {
    /// Stored tensors read as they are (an activation `[.., k]` row-major, a weight
    /// `[k, n]`): the template's own placeholders, so that its whole space — fragment
    /// copies and Hopper's TMA + wgmma included — applies. `gemm stored`.
    Stored,
    /// A product's operands read through views (a transpose, a flatten of the tensor
    /// before): `gemm`, `gemm transA`, `gemm transB`, `gemm transA transB`.
    Gemm { trans_a: bool, trans_b: bool },
    /// A batched MatMul's operands, one grid layer a product: `batched`.
    Batched,
    /// A convolution's im2col and filter views: `conv x=1x64x56x56 w=64x64x3x3
    /// stride=1,1 pad=1,1,1,1 dilation=1,1 NHWC`.
    Conv(ConvViews),
}

impl Views {
    /// Products read through views with neither operand transposed: what a product over
    /// stored operands was recorded as before stored operands were told apart.
    pub const GEMM: Views = Views::Gemm {
        trans_a: false,
        trans_b: false,
    };
}

/// What an anchor's kernel depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AnchorKey {
    pub template: AnchorTemplate,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// Products of `m × n × k` in one launch (a batched MatMul's, one grid layer each);
    /// 1 for one product. A batched product is never split.
    pub batch: i64,
    /// The operands' views.
    pub views: Views,
    /// Where the anchor may also run as a Winograd F(2×2, 3×3) convolution (f32, 3×3,
    /// stride 1, symmetric padding): the `m × n × k` of each of its 16 products, which
    /// the matmul template's config then tiles. Not part of the key's text: it follows
    /// from the views.
    pub winograd: Option<[i64; 3]>,
}

impl AnchorKey {
    /// Whether the operands are stored tensors read as they are ([`Views::Stored`]): the
    /// template's whole space applies, not only what reads through views.
    pub fn stored_operands(&self) -> bool {
        self.views == Views::Stored
    }

    /// Whether the product is batched (one grid layer a product, never split): several
    /// products, or a grouped convolution's products however many (its filter reads
    /// fewer channels than its input has).
    pub fn batched(&self) -> bool {
        self.batch > 1 || self.grouped_conv()
    }

    /// Whether the anchor is a grouped convolution: its filter reads fewer channels than
    /// its input has (its products are batched, and narrow ones take
    /// `grouped_conv::narrow_rule`'s tiles).
    pub fn grouped_conv(&self) -> bool {
        matches!(&self.views, Views::Conv(c) if c.x[1] != c.w[1])
    }

    /// What a record names the anchor by: its template and its text, without what
    /// follows from them ([`AnchorKey::winograd`]).
    pub fn record_key(&self) -> (AnchorTemplate, String) {
        (self.template, self.to_string())
    }
}

fn joined(v: &[usize]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Views {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Views::Stored => f.write_str("gemm stored"),
            Views::Gemm { trans_a, trans_b } => {
                f.write_str("gemm")?;
                if *trans_a {
                    f.write_str(" transA")?;
                }
                if *trans_b {
                    f.write_str(" transB")?;
                }
                Ok(())
            }
            Views::Batched => f.write_str("batched"),
            Views::Conv(c) => {
                let dims = |d: &[i64; 4]| {
                    d.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("x")
                };
                write!(
                    f,
                    "conv x={} w={} stride={} pad={} dilation={} {}",
                    dims(&c.x),
                    dims(&c.w),
                    joined(&c.strides),
                    joined(&c.pads),
                    joined(&c.dilations),
                    c.input.text()
                )
            }
        }
    }
}

impl fmt::Display for AnchorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m={},n={},k={}", self.m, self.n, self.k)?;
        if self.batch > 1 {
            write!(f, ",batch={}", self.batch)?;
        }
        write!(f, " {}", self.views)
    }
}

impl FromStr for Views {
    type Err = String;

    /// [`Views`]' text read back.
    fn from_str(text: &str) -> Result<Views, String> {
        let bad = || format!("`{text}` names no operand views weft makes");
        let words: Vec<&str> = text.split(' ').collect();
        match words.as_slice() {
            ["gemm", "stored"] => Ok(Views::Stored),
            ["batched"] => Ok(Views::Batched),
            ["gemm", rest @ ..] => {
                let trans_a = rest.first() == Some(&"transA");
                let trans_b = rest.get(usize::from(trans_a)) == Some(&"transB");
                if rest.len() != usize::from(trans_a) + usize::from(trans_b) {
                    return Err(bad());
                }
                Ok(Views::Gemm { trans_a, trans_b })
            }
            ["conv", x, w, stride, pad, dilation, input @ ..] => {
                fn field<'t>(word: &'t str, name: &str) -> Option<&'t str> {
                    word.strip_prefix(name)?.strip_prefix('=')
                }
                let numbers = |v: &str, sep: char| -> Result<Vec<i64>, String> {
                    v.split(sep)
                        .map(|d| d.parse::<i64>().map_err(|_| bad()))
                        .collect()
                };
                let four =
                    |v: Vec<i64>| -> Result<[i64; 4], String> { v.try_into().map_err(|_| bad()) };
                let sizes = |v: Vec<i64>| -> Result<Vec<usize>, String> {
                    v.into_iter()
                        .map(|d| usize::try_from(d).map_err(|_| bad()))
                        .collect()
                };
                let x = four(numbers(field(x, "x").ok_or_else(bad)?, 'x')?)?;
                let w = four(numbers(field(w, "w").ok_or_else(bad)?, 'x')?)?;
                let strides = sizes(numbers(field(stride, "stride").ok_or_else(bad)?, ',')?)?;
                let pads = sizes(numbers(field(pad, "pad").ok_or_else(bad)?, ',')?)?;
                let dilations = sizes(numbers(field(dilation, "dilation").ok_or_else(bad)?, ',')?)?;
                let input = match input {
                    ["NCHW"] => ConvInput::Nchw,
                    ["NHWC"] => ConvInput::Nhwc,
                    ["NHWC4", "copy"] => ConvInput::Nhwc4Copy,
                    [..] => return Err(bad()),
                };
                Ok(Views::Conv(ConvViews {
                    x,
                    w,
                    strides: strides.try_into().map_err(|_| bad())?,
                    pads: pads.try_into().map_err(|_| bad())?,
                    dilations: dilations.try_into().map_err(|_| bad())?,
                    input,
                }))
            }
            [..] => Err(bad()),
        }
    }
}

impl AnchorKey {
    /// The key a record names: `template` (its schedule) and `text` (its shape, the
    /// key's [`fmt::Display`]); `winograd` is left `None` (it follows from the views).
    pub fn parse(template: AnchorTemplate, text: &str) -> Result<AnchorKey, String> {
        let (sizes, views) = text
            .split_once(' ')
            .ok_or_else(|| format!("`{text}` is not `m=..,n=..,k=.. VIEWS`"))?;
        let mut dims = [None; 4];
        for part in sizes.split(',') {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` in `{text}` is not NAME=VALUE"))?;
            let at = ["m", "n", "k", "batch"]
                .iter()
                .position(|&n| n == name)
                .ok_or_else(|| format!("`{name}` in `{text}` is not m, n, k or batch"))?;
            let value: i64 = value
                .parse()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| format!("`{part}` in `{text}` is not a positive size"))?;
            dims[at] = Some(value);
        }
        let [Some(m), Some(n), Some(k), batch] = dims else {
            return Err(format!("`{text}` lacks one of m, n and k"));
        };
        Ok(AnchorKey {
            template,
            m,
            n,
            k,
            batch: batch.unwrap_or(1),
            views: views.parse()?,
            winograd: None,
        })
    }
}

/// A config of the anchor's template and how many parts its reduction is split into,
/// or the Winograd variant with the config of its 16 products.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorChoice {
    pub config: Config,
    pub splits: i64,
    /// Run as Winograd F(2×2, 3×3) (`config` then tiles its products; `splits` is 1).
    pub winograd: bool,
}

impl AnchorChoice {
    /// The template's `config` over the whole product, split into `splits` parts.
    pub fn gemm(config: Config, splits: i64) -> AnchorChoice {
        AnchorChoice {
            config,
            splits,
            winograd: false,
        }
    }

    /// `name=value,...,splits=N` (`,winograd=1` for the Winograd variant): the form
    /// tuning records store.
    pub fn to_record(&self) -> String {
        let winograd = if self.winograd { ",winograd=1" } else { "" };
        format!("{},splits={}{winograd}", self.config, self.splits)
    }

    /// Reads [`AnchorChoice::to_record`]'s form back.
    pub fn from_record(text: &str) -> Result<AnchorChoice, String> {
        let mut config = Config::parse(text)?;
        let mut take = |name: &str| {
            let at = config.0.iter().position(|(k, _)| k == name)?;
            Some(config.0.remove(at).1)
        };
        let splits = take("splits").ok_or_else(|| format!("`{text}` names no `splits`"))?;
        if !(1..=MAX_SPLITS).contains(&splits) {
            return Err(format!("splits={splits} is not in 1..={MAX_SPLITS}"));
        }
        let winograd = match take("winograd") {
            None | Some(0) => false,
            Some(1) if splits == 1 => true,
            Some(1) => return Err(format!("winograd=1 takes splits=1, not {splits}")),
            Some(v) => return Err(format!("winograd={v} is not 0 or 1")),
        };
        Ok(AnchorChoice {
            config,
            splits,
            winograd,
        })
    }
}

/// The part of an [`AnchorKey`] a choice is keyed by: everything but what follows from
/// it (`winograd`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ChoiceKey {
    template: AnchorTemplate,
    dims: [i64; 4],
    views: Views,
}

impl ChoiceKey {
    fn of(key: &AnchorKey) -> ChoiceKey {
        ChoiceKey {
            template: key.template,
            dims: [key.m, key.n, key.k, key.batch],
            views: key.views,
        }
    }
}

/// Choices made for anchors (by tuning, or read from records), which lowering takes
/// before its stated rule.
#[derive(Clone, Debug, Default)]
pub struct Choices {
    map: HashMap<ChoiceKey, (AnchorChoice, String)>,
    /// Split products whose last part sums ([`weft_kernels::split_last`]), and split-KV
    /// attention whose last chunk combines, where the target can, instead of a summing
    /// (combining) kernel. Off by default (the attention's measurement is beside
    /// `WEFT_ATTN_COMBINE` in the lowering): on the H200 (seventh
    /// session, fp16, batch 1) the one-kernel form made every model it touched slower
    /// — DenseNet-121 1.396 ms against 1.228, ResNet-50 412 µs against 347,
    /// Inception-v3 821 against 709 — a summing kernel in a CUDA graph costing less
    /// than the arrival, the fences and the last part's serial sum on the critical path.
    split_last: bool,
    /// Skinny products whose weight the layout pass stored K-major run on
    /// `weft_kernels::gemv::kmajor` ([`crate::CompileOptions::gemv_kmajor`], which sets
    /// it; off by default).
    gemv_kmajor: bool,
    /// What skinny products do before they wait for the kernel before them
    /// ([`crate::CompileOptions::weight_prefetch`], which sets it where the target places
    /// that wait: `TargetLimits::grid_dependency`).
    prefetch: weft_kernels::gemv::Lead,
}

impl Choices {
    /// No choices: every anchor by the rule.
    pub fn none() -> Choices {
        Choices::default()
    }

    /// Uses `choice` for `key`; `why` is shown beside the schedule (`tuned: 12.1 µs`).
    pub fn insert(&mut self, key: &AnchorKey, choice: AnchorChoice, why: String) {
        self.map.insert(ChoiceKey::of(key), (choice, why));
    }

    /// The choice for `key`, with why.
    pub fn get(&self, key: &AnchorKey) -> Option<&(AnchorChoice, String)> {
        self.map.get(&ChoiceKey::of(key))
    }

    /// The same choices with split products summing in their last part and split-KV
    /// attention combining in its last chunk (`true`), or in a summing (combining)
    /// kernel (`false`, the default), where the target has a device fence;
    /// `WEFT_SPLIT_LAST` and `WEFT_ATTN_COMBINE` override either.
    pub fn with_split_last(mut self, on: bool) -> Choices {
        self.split_last = on;
        self
    }

    /// The same choices with skinny products over K-major weights on the K-major
    /// template (`true`), or every skinny product on the row-major one (`false`).
    pub fn with_gemv_kmajor(mut self, on: bool) -> Choices {
        self.gemv_kmajor = on;
        self
    }

    /// Whether skinny products over K-major weights take the K-major template.
    pub fn gemv_kmajor(&self) -> bool {
        self.gemv_kmajor
    }

    /// The same choices with skinny products doing `lead` before they wait for the
    /// kernel before them.
    pub fn with_prefetch(mut self, lead: weft_kernels::gemv::Lead) -> Choices {
        self.prefetch = lead;
        self
    }

    /// What skinny products do before their wait.
    pub fn prefetch(&self) -> weft_kernels::gemv::Lead {
        self.prefetch
    }

    /// Whether split products sum in their last part where the target can.
    pub fn split_last(&self) -> bool {
        self.split_last
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_from_their_text() {
        let conv = Views::Conv(ConvViews {
            x: [1, 64, 56, 56],
            w: [64, 64, 3, 3],
            strides: [1, 1],
            pads: [1, 1, 1, 1],
            dilations: [1, 1],
            input: ConvInput::Nhwc4Copy,
        });
        for views in [
            Views::Stored,
            Views::GEMM,
            Views::Gemm {
                trans_a: false,
                trans_b: true,
            },
            Views::Gemm {
                trans_a: true,
                trans_b: true,
            },
            Views::Batched,
            conv,
        ] {
            for batch in [1, 12] {
                let key = AnchorKey {
                    template: AnchorTemplate::MatmulF16,
                    m: 3136,
                    n: 64,
                    k: 576,
                    batch,
                    views,
                    winograd: None,
                };
                let text = key.to_string();
                assert_eq!(AnchorKey::parse(key.template, &text), Ok(key), "{text}");
            }
        }
        assert_eq!(
            Views::GEMM.to_string(),
            "gemm",
            "records made before stored operands name this"
        );
        for bad in [
            "m=1,n=2 gemm",
            "m=1,n=2,k=0 gemm",
            "m=1,n=2,k=3 gemm transB transA",
            "m=1,n=2,k=3 conv x=1x2x3 w=1x1x1x1 stride=1,1 pad=0,0,0,0 dilation=1,1 NHWC",
            "m=1,n=2,k=3 winograd",
        ] {
            assert!(
                AnchorKey::parse(AnchorTemplate::Matmul, bad).is_err(),
                "{bad}"
            );
        }
    }
}
