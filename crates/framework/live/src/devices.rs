//! Accelerators the daemon can arbitrate: OpenCL devices (through the `opencl3` crate:
//! PoCL here, GPU drivers elsewhere) and CUDA devices (the driver library loaded at run
//! time; absent without a driver, never needed to build).

use hetsched_core::machine::{Machine, Unit, UnitType, CAPACITY_SCALE};

/// An accelerator found on this machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub kind: UnitType,
    pub name: String,
    /// OpenCL: index over all platforms' devices, platform by platform; CUDA: ordinal.
    pub index: u32,
}

/// OpenCL devices of every platform, in platform then device order. No ICD loader or no
/// platform: none.
pub fn opencl_devices() -> Vec<Device> {
    let Ok(platforms) = opencl3::platform::get_platforms() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in platforms {
        let Ok(ids) = p.get_devices(opencl3::device::CL_DEVICE_TYPE_ALL) else {
            continue;
        };
        for id in ids {
            let name = opencl3::device::Device::new(id)
                .name()
                .unwrap_or_else(|_| "opencl device".into());
            out.push(Device {
                kind: UnitType::OpenCl,
                name,
                index: out.len() as u32,
            });
        }
    }
    out
}

/// CUDA devices through the driver API, loaded with `libloading` (the `cudarc` crate
/// panics when libcuda is absent, see PITFALLS.md, so we probe ourselves).
pub fn cuda_devices() -> Vec<Device> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuCount = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: loading the NVIDIA driver library runs its initialisers, which is what
    // every CUDA program does; the symbols have the documented driver-API signatures.
    unsafe {
        let Ok(lib) = libloading::Library::new("libcuda.so.1") else {
            return Vec::new();
        };
        let (Ok(init), Ok(count)) = (
            lib.get::<CuInit>(b"cuInit\0"),
            lib.get::<CuCount>(b"cuDeviceGetCount\0"),
        ) else {
            return Vec::new();
        };
        if init(0) != 0 {
            return Vec::new();
        }
        let mut n = 0i32;
        if count(&mut n) != 0 {
            return Vec::new();
        }
        (0..n.max(0) as u32)
            .map(|i| Device {
                kind: UnitType::Gpu,
                name: format!("cuda{i}"),
                index: i,
            })
            .collect()
    }
}

/// Replaces a live machine's hwloc-reported accelerators by the devices the daemon can
/// actually drive, and returns each unit's device index (by unit id).
pub fn attach(machine: &mut Machine, devices: &[Device]) -> Vec<Option<u32>> {
    machine.units.retain(|u| u.kind == UnitType::Cpu);
    let mut index: Vec<Option<u32>> = vec![None; machine.units.len()];
    for d in devices {
        machine.units.push(Unit {
            id: machine.units.len() as u32,
            kind: d.kind,
            os_index: None,
            cpus: Vec::new(),
            cpu_kind: None,
            capacity: CAPACITY_SCALE,
            numa_node: None,
            accelerator: None,
            name: d.name.clone(),
        });
        index.push(Some(d.index));
    }
    index
}

/// Device indexes for a described (not live) machine: the k-th accelerator of a type
/// drives device k of that type.
pub fn described(machine: &Machine) -> Vec<Option<u32>> {
    let mut seen = [0u32; 4];
    machine
        .units
        .iter()
        .map(|u| {
            (u.kind != UnitType::Cpu).then(|| {
                seen[u.kind as usize] += 1;
                seen[u.kind as usize] - 1
            })
        })
        .collect()
}
