//! The `cpu` device: lowered kernels run in weft's interpreter ([`weft_ir::interp`]),
//! which also reports out-of-bounds accesses and shared-memory races.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use weft_codegen_common::TargetLimits;
use weft_ir::data::{Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::kernel::{Kernel, KernelParam};

use crate::device::{
    ArgError, BufferId, Device, DeviceError, KernelArg, KernelId, Launch, Slab, Timing,
    check_launch, check_upload,
};
use crate::target::Target;

/// Runs kernels in the interpreter. Always available.
#[derive(Debug)]
pub struct CpuDevice {
    target: Target,
    /// What kernels are checked against: the interpreter's own, or the target's whose
    /// kernels it runs ([`CpuDevice::emulating`]).
    limits: TargetLimits,
    buffers: Slab<(DType, TensorData)>,
    kernels: Vec<Kernel>,
    /// Printed kernel → index in `kernels`: the interpreter's "source".
    cache: HashMap<String, usize>,
}

impl Default for CpuDevice {
    fn default() -> Self {
        CpuDevice::new()
    }
}

impl CpuDevice {
    /// A new interpreter device.
    pub fn new() -> CpuDevice {
        CpuDevice::emulating(Target::Cpu.limits())
    }

    /// An interpreter device that takes kernels scheduled for `limits` (a GPU target's:
    /// Hopper's wgmma fragments, Metal's 8×8 ones), checked against those limits: how a
    /// whole model compiled for a GPU runs on the interpreter, which runs every construct
    /// of the IR and checks the asynchronous orders.
    pub fn emulating(limits: TargetLimits) -> CpuDevice {
        CpuDevice {
            target: Target::Cpu,
            limits,
            buffers: Slab::default(),
            kernels: Vec::new(),
            cache: HashMap::new(),
        }
    }

    fn kernel(&self, id: KernelId) -> Result<&Kernel, DeviceError> {
        self.kernels.get(id.0).ok_or(DeviceError::BadHandle {
            what: "kernel",
            index: id.0,
        })
    }
}

impl Device for CpuDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn name(&self) -> String {
        "weft interpreter".to_string()
    }

    fn limits(&self) -> TargetLimits {
        self.limits.clone()
    }

    fn memory_available(&self) -> Option<u64> {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        mem_available(&meminfo)
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufferId, DeviceError> {
        // A buffer this process cannot hold is an error, not an abort: the memory is
        // asked for (and given back) once before the buffer is made.
        let bytes = len.checked_mul(dtype.bytes());
        if bytes.is_none_or(|b| Vec::<u8>::new().try_reserve_exact(b).is_err()) {
            return Err(DeviceError::OutOfMemory {
                target: self.target.to_string(),
                bytes: bytes.unwrap_or(usize::MAX),
                len,
                dtype,
            });
        }
        Ok(BufferId(
            self.buffers.insert((dtype, TensorData::zeros(dtype, len))),
        ))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.buffers.remove(buf.0, "buffer").map(|_| ())
    }

    fn upload(&mut self, buf: BufferId, data: &TensorData) -> Result<(), DeviceError> {
        let (dtype, held) = self.buffers.get_mut(buf.0, "buffer")?;
        check_upload(buf, *dtype, held.len(), data)?;
        *held = data.clone();
        Ok(())
    }

    fn download(&mut self, buf: BufferId) -> Result<TensorData, DeviceError> {
        Ok(self.buffers.get(buf.0, "buffer")?.1.clone())
    }

    fn compile(&mut self, kernel: &Kernel) -> Result<KernelId, DeviceError> {
        let key = kernel.to_string();
        if let Some(&i) = self.cache.get(&key) {
            return Ok(KernelId(i));
        }
        weft_codegen_common::check_limits(kernel, &self.limits())?;
        self.kernels.push(kernel.clone());
        self.cache.insert(key, self.kernels.len() - 1);
        Ok(KernelId(self.kernels.len() - 1))
    }

    fn source(&self, _kernel: KernelId) -> Option<&str> {
        None
    }

    fn launch(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError> {
        let k = self.kernel(kernel)?.clone();
        check_launch(&k, args, |b| {
            let (dtype, data) = self.buffers.get(b.0, "buffer")?;
            Ok((*dtype, data.len()))
        })?;
        // The interpreter addresses buffers by the kernel's own buffer identities: move
        // each argument's data under its parameter's id, run, and move it back.
        let mut buffers: HashMap<u64, TensorData> = HashMap::new();
        let mut scalars: HashMap<u64, Scalar> = HashMap::new();
        let mut taken: Vec<(u64, BufferId, Option<TensorData>)> = Vec::new();
        let mut result = Ok(());
        for (index, (p, a)) in k.params.iter().zip(args).enumerate() {
            match (p, a) {
                (KernelParam::Buffer { buffer, .. }, KernelArg::Buffer(id)) => {
                    if taken.iter().any(|(_, t, _)| t == id) {
                        result = Err(ArgError::LaunchKind {
                            kernel: k.name.clone(),
                            index,
                            param: buffer.name().to_string(),
                            expected: "buffer distinct from the other arguments",
                        }
                        .into());
                        break;
                    }
                    let mut data = match self.buffers.get_mut(id.0, "buffer") {
                        Ok((_, data)) => std::mem::replace(data, TensorData::F32(Vec::new())),
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    };
                    // A buffer may be longer than the parameter (a model's reused
                    // buffers are): the kernel sees its first elements, as on a GPU.
                    let tail = split_tail(&mut data, buffer.numel().max(0) as usize);
                    buffers.insert(buffer.id(), data);
                    taken.push((buffer.id(), *id, tail));
                }
                (KernelParam::Scalar(v), KernelArg::Scalar(s)) => {
                    scalars.insert(v.id(), *s);
                }
                // `check_launch` rejected every other pairing.
                _ => {}
            }
        }
        if result.is_ok() {
            result = weft_ir::interp::run_kernel(&k, &mut buffers, &scalars).map_err(|source| {
                DeviceError::Interp {
                    kernel: k.name.clone(),
                    source: Box::new(source),
                }
            });
        }
        for (param_id, id, tail) in taken {
            if let (Some(mut data), Ok((_, slot))) = (
                buffers.remove(&param_id),
                self.buffers.get_mut(id.0, "buffer"),
            ) {
                if let Some(tail) = tail {
                    join_tail(&mut data, tail);
                }
                *slot = data;
            }
        }
        result
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    fn time_launches(
        &mut self,
        launches: &[Launch],
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, DeviceError> {
        for _ in 0..warmup {
            for l in launches {
                self.launch(l.kernel, &l.args)?;
            }
        }
        let mut all: Vec<Duration> = Vec::with_capacity(iters);
        for _ in 0..iters {
            let start = Instant::now();
            for l in launches {
                self.launch(l.kernel, &l.args)?;
            }
            all.push(start.elapsed());
        }
        // The interpreter runs on the host: its wall clock is the only time there is, and
        // there is no launch to separate from it (`Timing::host` stays `None`).
        Timing::from_samples(all).ok_or(DeviceError::NoIterations)
    }
}

/// Splits `data` after its first `n` elements, returning the rest (`None` if there is
/// none).
fn split_tail(data: &mut TensorData, n: usize) -> Option<TensorData> {
    if data.len() <= n {
        return None;
    }
    Some(match data {
        TensorData::F32(v) => TensorData::F32(v.split_off(n)),
        TensorData::F16(v) => TensorData::F16(v.split_off(n)),
        TensorData::I32(v) => TensorData::I32(v.split_off(n)),
        TensorData::U32(v) => TensorData::U32(v.split_off(n)),
    })
}

/// Appends what [`split_tail`] took back onto `data`.
fn join_tail(data: &mut TensorData, tail: TensorData) {
    match (data, tail) {
        (TensorData::F32(v), TensorData::F32(t)) => v.extend(t),
        (TensorData::F16(v), TensorData::F16(t)) => v.extend(t),
        (TensorData::I32(v), TensorData::I32(t)) => v.extend(t),
        (TensorData::U32(v), TensorData::U32(t)) => v.extend(t),
        // Split from the same buffer: the variants always match.
        _ => {}
    }
}

/// `MemAvailable` of a `/proc/meminfo` text (Linux's estimate of what a new allocation
/// can take without swapping), in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

#[cfg(test)]
mod memory_tests {
    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       16316412 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(super::mem_available(text), Some(8_192_000_000));
        assert_eq!(super::mem_available("MemTotal: 1 kB\n"), None);
    }
}
