//! [`Emitted`]: what every emitter returns — the source, and for each kernel in it the
//! entry point and the facts a runtime needs to launch it (grid and block, dynamic shared
//! memory, how buffers bind). A runtime takes these from the emitter once and never asks
//! an emitter again.
//!
//! [`checked`] is the one place a kernel is checked before emission: the lowering
//! contract, then the target's [`TargetLimits`]. Every emitter calls it exactly once per
//! kernel; so does [`Emitted::handwritten`], for sources written outside weft.

use std::fmt;

use weft_ir::kernel::Kernel;

use crate::contract::check_lowered;
use crate::error::EmitError;
use crate::limits::{TargetLimits, check_limits};

/// The language of an emitted source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// CUDA C, compiled by NVRTC.
    Cuda,
    /// WGSL, compiled by wgpu (naga) or a browser (Tint).
    Wgsl,
    /// Metal Shading Language.
    Msl,
    /// HIP C++ (AMD GPUs), compiled by hipcc.
    Hip,
}

impl Language {
    /// The name emitters use in their errors (`CUDA`, `WGSL`, `MSL`, `HIP`).
    pub fn backend(self) -> &'static str {
        match self {
            Language::Cuda => "CUDA",
            Language::Wgsl => "WGSL",
            Language::Msl => "MSL",
            Language::Hip => "HIP",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Language::Cuda => "CUDA C",
            Language::Wgsl => "WGSL",
            Language::Msl => "MSL",
            Language::Hip => "HIP",
        })
    }
}

/// Checks `kernel` before it is emitted in `language`: the lowering contract, then
/// `limits`. The one check of a kernel on its way to a target.
pub fn checked(
    kernel: &Kernel,
    language: Language,
    limits: &TargetLimits,
) -> Result<(), EmitError> {
    check_lowered(kernel, language.backend())?;
    check_limits(kernel, limits)?;
    Ok(())
}

/// An emitted source and how to launch each kernel in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    pub language: Language,
    /// The whole source: one translation unit (CUDA, HIP), one library (MSL), or one
    /// module per kernel one after another (WGSL: see the WGSL emitter).
    pub source: String,
    /// One per kernel, in launch order.
    pub kernels: Vec<EntryPoint>,
}

/// One kernel of an [`Emitted`] source: its entry point and its launch facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The lowered kernel's name.
    pub kernel: String,
    /// The function the source defines for it (the kernel's name unless that is not a
    /// valid identifier of the language).
    pub name: String,
    /// Blocks per grid and threads per block.
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Shared memory the launch must pass as dynamic (CUDA past 48 KiB); 0 elsewhere.
    pub dynamic_shared_bytes: u32,
    /// How buffer parameters bind (WGSL); empty where arguments are passed in parameter
    /// order (CUDA, HIP) or at `[[buffer(i)]]` = parameter index (MSL).
    pub bindings: Vec<Binding>,
    /// The uniform buffer that holds the scalar parameters (WGSL), if there are any.
    pub uniform: Option<Uniform>,
    /// The function waits, before any memory access, until the kernel launched before it
    /// has finished and its writes are visible (CUDA's `griddepcontrol.wait`), so the
    /// launch may overlap that kernel's tail (programmatic dependent launch). A source
    /// written by hand does not, and is launched the ordinary way.
    pub waits_for_previous_grid: bool,
}

/// A storage-buffer binding of a WGSL entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// `@binding(n)` in `@group(0)`.
    pub binding: u32,
    /// Index into `kernel.params`.
    pub param: usize,
    /// `var<storage, read>` (else `read_write`).
    pub read_only: bool,
    /// Declared `array<vec4<T>>`: the buffer's byte size must be a multiple of 16 (the
    /// runtime rounds its allocation up).
    pub vec4: bool,
}

/// The uniform buffer holding every scalar parameter of a WGSL entry point.
///
/// Every field is 4 bytes: `i32`, `u32` and `f32` as themselves, `f16` as an `f32` (the
/// kernel converts it), `bool` as a `u32` that is 0 or 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uniform {
    /// `@binding(n)` in `@group(0)`, after the storage buffers.
    pub binding: u32,
    /// Bytes to allocate (a multiple of 16).
    pub size: u64,
    /// `(index into kernel.params, byte offset)` per scalar parameter, in order.
    pub fields: Vec<(usize, u64)>,
}

impl EntryPoint {
    /// The entry point `name` of `kernel`, launched with the kernel's grid and block, no
    /// dynamic shared memory and no bindings (fill those in where the language has them).
    pub fn new(kernel: &Kernel, name: String) -> EntryPoint {
        EntryPoint {
            kernel: kernel.name.clone(),
            name,
            grid: kernel.grid,
            block: kernel.block,
            dynamic_shared_bytes: 0,
            bindings: Vec::new(),
            uniform: None,
            waits_for_previous_grid: false,
        }
    }
}

impl Emitted {
    /// The entry point of the first kernel (the only one of a single kernel's source).
    ///
    /// # Panics
    /// On an `Emitted` built by hand with no kernels. Never for what an emitter or
    /// [`Emitted::handwritten`] returns: `emit` takes one kernel, and `emit_lowered`
    /// refuses a function without kernels.
    pub fn entry(&self) -> &EntryPoint {
        &self.kernels[0]
    }

    /// A source written outside weft (by hand, by another tool) for `kernel`, defining
    /// `entry` and taking the kernel's parameters in order, checked like an emitted one
    /// against `limits`. The launch facts are the kernel's; `dynamic_shared_bytes`,
    /// bindings and uniform are the caller's to set where the language needs them.
    pub fn handwritten(
        kernel: &Kernel,
        language: Language,
        source: String,
        entry: EntryPoint,
        limits: &TargetLimits,
    ) -> Result<Emitted, EmitError> {
        checked(kernel, language, limits)?;
        Ok(Emitted {
            language,
            source,
            kernels: vec![entry],
        })
    }
}

/// The source text.
impl fmt::Display for Emitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
