//! Adapter choice: which adapters wgpu finds, how they rank, and what
//! [`crate::available_targets`] reports for the wgpu targets.

use crate::target::{Target, TargetInfo, WgpuBackend};

use super::{WgpuError, guard};

/// How to get an adapter for `backend`, for error messages.
pub(super) fn no_adapter_hint(backend: WgpuBackend) -> &'static str {
    match backend {
        WgpuBackend::Vulkan | WgpuBackend::Best | WgpuBackend::WebGpu => {
            "install a Vulkan driver (without a GPU, Mesa's CPU driver lavapipe: \
             `apt-get install mesa-vulkan-drivers`)"
        }
        WgpuBackend::Metal => "Metal exists only on Apple platforms",
        WgpuBackend::Dx12 => "DirectX 12 exists only on Windows",
        WgpuBackend::Gl => "install an OpenGL ES / EGL driver (e.g. Mesa's `libegl-mesa0`)",
    }
}

/// How good an adapter is for compute: discrete before integrated before virtual before
/// CPU; native APIs before GL.
fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let ty = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    };
    let api = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        _ => 1,
    };
    (ty, api)
}

pub(super) fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type)
}

/// Every adapter wgpu finds on `backends`, best first. The instance is created for those
/// backends only: an instance for GL initialises EGL (six EGL library opens under
/// `strace`), which opening a Vulkan device need not do.
pub(super) fn adapters(backends: wgpu::Backends) -> Result<Vec<wgpu::Adapter>, WgpuError> {
    guard("enumerating adapters", || {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        // `WGPU_BACKEND` still narrows the choice; it cannot widen it.
        desc.backends &= backends;
        let instance = wgpu::Instance::new(desc);
        let mut all = pollster::block_on(instance.enumerate_adapters(backends));
        all.sort_by_key(|a| rank(&a.get_info()));
        all
    })
}

/// The adapters `backend` accepts, best first, looking at the native APIs first: GL is
/// enumerated only for `gl`, or for `best` and `webgpu` unless a native API already
/// offers a discrete GPU (nothing ranks above one; a GL discrete GPU still beats a native
/// CPU driver, so then GL is asked too).
pub(super) fn candidates(backend: WgpuBackend) -> Result<Vec<wgpu::Adapter>, WgpuError> {
    let wanted = backend.backends();
    let native = wanted - wgpu::Backends::GL;
    if !native.is_empty() {
        let these = matching(&adapters(native)?, backend);
        let discrete = these
            .first()
            .is_some_and(|a| a.get_info().device_type == wgpu::DeviceType::DiscreteGpu);
        if discrete || !wanted.contains(wgpu::Backends::GL) {
            return Ok(these);
        }
    }
    Ok(matching(&adapters(wanted)?, backend))
}

/// The adapters `backend` accepts, best first.
pub(super) fn matching(all: &[wgpu::Adapter], backend: WgpuBackend) -> Vec<wgpu::Adapter> {
    all.iter()
        .filter(|a| backend.backends().contains(a.get_info().backend.into()))
        // `webgpu` promises WebGPU's default limits; an adapter below them cannot keep it.
        .filter(|a| {
            backend != WgpuBackend::WebGpu || wgpu::Limits::default().check_limits(&a.limits())
        })
        .cloned()
        .collect()
}

/// The wgpu entries of [`crate::available_targets`].
pub(crate) fn probe_targets() -> Vec<TargetInfo> {
    let backends = [
        WgpuBackend::Vulkan,
        WgpuBackend::Metal,
        WgpuBackend::Dx12,
        WgpuBackend::Gl,
        WgpuBackend::Best,
        WgpuBackend::WebGpu,
    ];
    let all = match adapters(wgpu::Backends::all()) {
        Ok(all) => all,
        Err(e) => {
            return backends
                .iter()
                .map(|&backend| TargetInfo {
                    target: Target::Wgpu {
                        backend,
                        device: 0,
                        checks: None,
                    },
                    device: None,
                    unavailable: Some(e.to_string()),
                })
                .collect();
        }
    };
    let found: Vec<String> = all.iter().map(|a| describe(&a.get_info())).collect();
    let mut out = Vec::new();
    for backend in backends {
        let these = matching(&all, backend);
        if these.is_empty() {
            out.push(TargetInfo {
                target: Target::Wgpu {
                    backend,
                    device: 0,
                    checks: None,
                },
                device: None,
                unavailable: Some(
                    WgpuError::NoAdapter {
                        backend: backend.name().to_string(),
                        found: found.clone(),
                        hint: no_adapter_hint(backend),
                    }
                    .to_string(),
                ),
            });
        }
        // `wgpu` and `webgpu` pick one adapter; further ones are reached by backend name.
        let listed = if matches!(backend, WgpuBackend::Best | WgpuBackend::WebGpu) {
            1
        } else {
            these.len()
        };
        for (device, a) in these.iter().take(listed).enumerate() {
            out.push(TargetInfo {
                target: Target::Wgpu {
                    backend,
                    device,
                    checks: None,
                },
                device: Some(describe(&a.get_info())),
                unavailable: None,
            });
        }
    }
    out
}
