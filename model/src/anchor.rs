//! What identifies an anchor (a convolution or product on a matmul template) and what
//! can be chosen for it: the key lowering reports, the config and split parts a tuning
//! run or a record chooses, and the choices lowering takes before its stated rule.

use std::collections::HashMap;
use std::fmt;

use weft_ops::templates::Config;

/// The most parts a reduction is split into (the rule's bound, which records obey too).
pub use weft_ops::templates::rule::MAX_SPLITS;

/// The template an anchor runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnchorTemplate {
    /// The fp32 matmul template (CUDA cores; no TF32).
    Matmul,
    /// The fp16 matmul template (matrix units where the target has them, f32 sums).
    MatmulF16,
}

impl AnchorTemplate {
    /// The template's name, as tuning records name the schedule.
    pub fn name(self) -> &'static str {
        match self {
            AnchorTemplate::Matmul => "matmul",
            AnchorTemplate::MatmulF16 => "matmul_f16",
        }
    }
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
    /// The operands' views: `conv x=1x64x56x56 w=64x64x3x3 stride=1,1 pad=1,1,1,1
    /// dilation=1,1 NHWC`, `gemm transB`.
    pub views: String,
    /// Where the anchor may also run as a Winograd F(2×2, 3×3) convolution (f32, 3×3,
    /// stride 1, symmetric padding): the `m × n × k` of each of its 16 products, which
    /// the matmul template's config then tiles. Not part of the key's text: it follows
    /// from the views.
    pub winograd: Option<[i64; 3]>,
}

/// The views of a product whose operands are stored tensors read as they are (an
/// activation `[.., k]` row-major, a weight `[k, n]`): the template's own placeholders,
/// so that its whole space — fragment copies and Hopper's TMA + wgmma included — applies.
pub const STORED_VIEWS: &str = "gemm stored";

impl AnchorKey {
    /// Whether the operands are stored tensors read as they are ([`STORED_VIEWS`]): the
    /// template's whole space applies, not only what reads through views.
    pub fn stored_operands(&self) -> bool {
        self.views == STORED_VIEWS
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

/// Choices made for anchors (by tuning), which lowering takes before its stated rule.
/// Keyed by the template's name and the key's text: the record's schedule and shape.
#[derive(Clone, Debug, Default)]
pub struct Choices {
    map: HashMap<(String, String), (AnchorChoice, String)>,
}

impl Choices {
    /// No choices: every anchor by the rule.
    pub fn none() -> Choices {
        Choices::default()
    }

    /// Uses `choice` for `key`; `why` is shown beside the schedule (`tuned: 12.1 µs`).
    pub fn insert(&mut self, key: &AnchorKey, choice: AnchorChoice, why: String) {
        self.insert_named(key.template.name(), &key.to_string(), choice, why);
    }

    /// Uses `choice` for the anchor on `template` (its name) whose key reads `key`: how
    /// a tuning record's schedule and shape name it.
    pub fn insert_named(&mut self, template: &str, key: &str, choice: AnchorChoice, why: String) {
        self.map
            .insert((template.to_string(), key.to_string()), (choice, why));
    }

    /// The choice for `key`, with why.
    pub fn get(&self, key: &AnchorKey) -> Option<&(AnchorChoice, String)> {
        self.map
            .get(&(key.template.name().to_string(), key.to_string()))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
