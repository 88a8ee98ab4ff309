//! The per-kernel resource report of AMD's compiler: clang's
//! `-Rpass-analysis=kernel-resource-usage` remarks, parsed.
//!
//! clang writes one block of remarks per function, in this form (ROCm 5.2, clang 15):
//!
//! ```text
//! k.hip:3:1: remark: Function Name: add [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     SGPRs: 9 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     VGPRs: 4 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     AGPRs: 0 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     ScratchSize [bytes/lane]: 0 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     Occupancy [waves/SIMD]: 8 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     VGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
//! k.hip:3:1: remark:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=kernel-resource-usage]
//! ```
//!
//! `AGPRs` (the accumulation registers of MFMA) appear only on architectures that have
//! them (gfx90a, not gfx1100). Lines that are not these remarks (the source excerpt clang
//! prints under each, warnings) are skipped.

use std::fmt;

/// What one compiled kernel uses of an AMD compute unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// The function's symbol (a kernel's entry point).
    pub name: String,
    /// Vector registers per lane.
    pub vgprs: u32,
    /// Accumulation registers per lane (gfx90a, gfx940); `None` where the architecture
    /// has none.
    pub agprs: Option<u32>,
    /// Scalar registers per wave.
    pub sgprs: u32,
    /// Vector registers spilled to scratch memory.
    pub vgpr_spills: u32,
    /// Scalar registers spilled (to vector lanes or scratch).
    pub sgpr_spills: u32,
    /// Private (scratch) memory per lane, in bytes: spills and per-thread arrays the
    /// compiler could not keep in registers.
    pub scratch_bytes: u32,
    /// LDS (shared memory) per workgroup, in bytes.
    pub lds_bytes: u32,
    /// Waves that can be resident per SIMD, as the compiler computes it from registers
    /// and LDS.
    pub occupancy: u32,
}

impl KernelResources {
    /// True if anything spilled (registers or scratch).
    pub fn spills(&self) -> bool {
        self.vgpr_spills > 0 || self.sgpr_spills > 0 || self.scratch_bytes > 0
    }
}

impl fmt::Display for KernelResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} VGPRs", self.name, self.vgprs)?;
        if let Some(a) = self.agprs {
            write!(f, ", {a} AGPRs")?;
        }
        write!(
            f,
            ", {} SGPRs, spills {} VGPR / {} SGPR, scratch {} B/lane, LDS {} B, occupancy {} waves/SIMD",
            self.sgprs,
            self.vgpr_spills,
            self.sgpr_spills,
            self.scratch_bytes,
            self.lds_bytes,
            self.occupancy
        )
    }
}

const REMARK: &str = "[-Rpass-analysis=kernel-resource-usage]";

/// The report of every function in `log` (hipcc's stderr), in the order clang wrote them.
/// An error names the function and the line that did not parse, or the field missing.
pub fn parse_remarks(log: &str) -> Result<Vec<KernelResources>, String> {
    let mut out: Vec<Partial> = Vec::new();
    for line in log.lines() {
        let Some(body) = line
            .split_once("remark:")
            .map(|(_, b)| b.trim())
            .and_then(|b| b.strip_suffix(REMARK))
        else {
            continue;
        };
        let (key, value) = body
            .split_once(':')
            .map(|(k, v)| (k.trim(), v.trim()))
            .ok_or_else(|| format!("a resource remark without `key: value`: `{line}`"))?;
        if key == "Function Name" {
            out.push(Partial::new(value));
            continue;
        }
        let current = out
            .last_mut()
            .ok_or_else(|| format!("a resource remark before any `Function Name`: `{line}`"))?;
        let n: u32 = value.parse().map_err(|_| {
            format!(
                "function `{}`: `{key}` is `{value}`, not a count",
                current.name
            )
        })?;
        current.set(key, n);
    }
    out.into_iter().map(Partial::finish).collect()
}

/// A function's fields as they are read; unknown keys (a later clang's additions) are
/// ignored.
struct Partial {
    name: String,
    fields: Vec<(&'static str, u32)>,
}

const FIELDS: [&str; 8] = [
    "VGPRs",
    "AGPRs",
    "SGPRs",
    "VGPRs Spill",
    "SGPRs Spill",
    "ScratchSize [bytes/lane]",
    "LDS Size [bytes/block]",
    "Occupancy [waves/SIMD]",
];

impl Partial {
    fn new(name: &str) -> Partial {
        Partial {
            name: name.to_string(),
            fields: Vec::new(),
        }
    }

    fn set(&mut self, key: &str, value: u32) {
        if let Some(k) = FIELDS.iter().find(|f| **f == key) {
            self.fields.push((k, value));
        }
    }

    fn get(&self, key: &str) -> Option<u32> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn finish(self) -> Result<KernelResources, String> {
        let need = |key: &str| {
            self.get(key)
                .ok_or_else(|| format!("function `{}`: no `{key}` remark", self.name))
        };
        Ok(KernelResources {
            vgprs: need("VGPRs")?,
            agprs: self.get("AGPRs"),
            sgprs: need("SGPRs")?,
            vgpr_spills: need("VGPRs Spill")?,
            sgpr_spills: need("SGPRs Spill")?,
            scratch_bytes: need("ScratchSize [bytes/lane]")?,
            lds_bytes: need("LDS Size [bytes/block]")?,
            occupancy: need("Occupancy [waves/SIMD]")?,
            name: self.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
k.hip:3:1: remark: Function Name: add [-Rpass-analysis=kernel-resource-usage]
extern \"C\" __global__ void add() {
^
k.hip:3:1: remark:     SGPRs: 9 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     VGPRs: 154 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     AGPRs: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     ScratchSize [bytes/lane]: 16 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     Occupancy [waves/SIMD]: 3 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     VGPRs Spill: 2 [-Rpass-analysis=kernel-resource-usage]
k.hip:3:1: remark:     LDS Size [bytes/block]: 8192 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark: Function Name: mul [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     SGPRs: 6 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     VGPRs: 2 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     ScratchSize [bytes/lane]: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     Occupancy [waves/SIMD]: 16 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     VGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:9:1: remark:     LDS Size [bytes/block]: 0 [-Rpass-analysis=kernel-resource-usage]
";

    #[test]
    fn parses_both_functions() {
        let r = parse_remarks(LOG).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            KernelResources {
                name: "add".into(),
                vgprs: 154,
                agprs: Some(0),
                sgprs: 9,
                vgpr_spills: 2,
                sgpr_spills: 0,
                scratch_bytes: 16,
                lds_bytes: 8192,
                occupancy: 3,
            }
        );
        assert!(r[0].spills());
        assert_eq!(r[1].agprs, None);
        assert_eq!(r[1].occupancy, 16);
        assert!(!r[1].spills());
    }

    #[test]
    fn missing_and_malformed_fields_are_named() {
        let truncated: String = LOG.lines().take(5).map(|l| format!("{l}\n")).collect();
        let e = parse_remarks(&truncated).unwrap_err();
        assert!(e.contains("`add`: no `VGPRs Spill`"), "{e}");
        let bad = LOG.replace("VGPRs: 154", "VGPRs: many");
        let e = parse_remarks(&bad).unwrap_err();
        assert!(e.contains("`VGPRs` is `many`"), "{e}");
        let orphan = "x:1:1: remark:     VGPRs: 3 [-Rpass-analysis=kernel-resource-usage]";
        assert!(parse_remarks(orphan).unwrap_err().contains("before any"));
        assert_eq!(parse_remarks("warning: nothing here\n").unwrap(), vec![]);
    }
}
