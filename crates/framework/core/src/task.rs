//! Tasks as the scheduler knows them: a task's meta info (what an application tells the
//! scheduler: Beisel et al.'s meta info) and what an engine reports of its runs.
//!
//! How much work a task really is, and how fast it goes on each unit, is not here: live,
//! only the application's run knows; in the simulator it is the workload model
//! (`hetsched_sim::task::SimTask`), which policies never see. A policy learns run times
//! from what the engines report ([`TaskEntry::run_ns`], [`TaskEntry::runs`]), the same
//! in both.

use crate::machine::UnitType;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A task's id: unique within one run, assigned in arrival order.
pub type TaskId = u64;

/// One value per [`UnitType`], indexed by `UnitType as usize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerUnitType<T>(pub [T; 4]);

impl<T: Copy> PerUnitType<T> {
    pub fn get(&self, kind: UnitType) -> T {
        self.0[kind as usize]
    }
    pub fn set(&mut self, kind: UnitType, value: T) {
        self.0[kind as usize] = value;
    }
}

impl<T: Copy + Default> FromIterator<(UnitType, T)> for PerUnitType<T> {
    /// The given values, the default (0) for the types not given.
    fn from_iter<I: IntoIterator<Item = (UnitType, T)>>(values: I) -> Self {
        let mut all = PerUnitType::default();
        for (kind, value) in values {
            all.set(kind, value);
        }
        all
    }
}

impl<T: Copy + Default + PartialEq> PerUnitType<T> {
    /// Whether every type's value is the default (0).
    pub fn is_default(&self) -> bool {
        *self == PerUnitType::default()
    }
}

/// Serde forms of a [`PerUnitType`] as a map by unit type name, as applications write
/// them (`{"cpu": 1, "opencl": 2}`): an absent type is 0 and an unknown name is refused.
/// One module per field so that a malformed value's error names what was expected in the
/// words clients and tests match (`expected struct WireAffinity`): the struct exists
/// only for that name.
macro_rules! by_type_name {
    ($(#[$doc:meta])* $module:ident, $name:ident) => {
        $(#[$doc])*
        pub mod $module {
            use super::PerUnitType;
            use serde::{Deserialize, Deserializer, Serialize, Serializer};

            #[derive(Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            struct $name<T> {
                #[serde(default)]
                cpu: T,
                #[serde(default)]
                gpu: T,
                #[serde(default)]
                opencl: T,
                #[serde(default)]
                coprocessor: T,
            }

            pub fn serialize<T: Serialize + Copy, S: Serializer>(
                values: &PerUnitType<T>,
                s: S,
            ) -> Result<S::Ok, S::Error> {
                let [cpu, gpu, opencl, coprocessor] = values.0;
                $name {
                    cpu,
                    gpu,
                    opencl,
                    coprocessor,
                }
                .serialize(s)
            }

            pub fn deserialize<'de, T: Deserialize<'de> + Default, D: Deserializer<'de>>(
                d: D,
            ) -> Result<PerUnitType<T>, D::Error> {
                let n = $name::<T>::deserialize(d)?;
                Ok(PerUnitType([n.cpu, n.gpu, n.opencl, n.coprocessor]))
            }
        }
    };
}

by_type_name!(
    /// [`MetaInfo::affinity`]'s form.
    affinity_by_name,
    WireAffinity
);
by_type_name!(
    /// [`MetaInfo::checkpoint_ns`]'s form.
    checkpoints_by_name,
    WireCheckpoints
);

/// Per-unit-type affinity: how well a task's implementation for a unit type performs
/// (Beisel's meta info). 0 = no implementation for that type.
pub type Affinity = PerUnitType<f64>;

impl Affinity {
    /// Whether the task has an implementation for `kind`.
    #[inline]
    pub fn runs_on(&self, kind: UnitType) -> bool {
        self.get(kind) > 0.0
    }
}

/// A task's meta info as its application declares it (Beisel et al.'s `meta_info`),
/// whatever the application speaks: this is the daemon protocol's `alloc` (its serde
/// form is the wire's JSON), what a worker (`hetsched-worker`) declares, and what the
/// C ABI's `hetsched_meta` and Python's `alloc` are turned into. The daemon checks it
/// and makes a [`Task`] of it; the signature's form is the one crate that knows
/// signatures' (`hetsched-live` carries a `hetsched_sig::Signature`), a worker declares
/// none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(serialize = "Sig: Serialize", deserialize = "Sig: Deserialize<'de>")
)]
pub struct MetaInfo<Sig> {
    /// Task type name (performance models learn per type), e.g. "md5".
    pub kind: String,
    #[serde(with = "affinity_by_name")]
    pub affinity: Affinity,
    /// Bytes copied to an accelerator when the task starts there.
    #[serde(default, rename = "memory_to_copy")]
    pub bytes_in: u64,
    /// CFS-style weight, 1024 = nice 0.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Bytes copied back from an accelerator when the task completes there (a worker's
    /// checkpoint). (This and the next two are left out when unset, so that a daemon
    /// older than them, which refuses unknown fields, still serves clients that do not
    /// use them.)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_out: u64,
    /// How long the task runs between checkpoints on each unit type, in ns (0: it
    /// reaches none there).
    #[serde(
        default,
        skip_serializing_if = "PerUnitType::is_default",
        with = "checkpoints_by_name"
    )]
    pub checkpoint_ns: PerUnitType<u64>,
    /// The NUMA node (OS index) holding the task's memory, one of the machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_home: Option<u32>,
    /// The process that runs the task, when it is an unmodified program (`hetsched
    /// run`): the daemon checks that it is the client's own, measures it for the
    /// policy's ticks and `stats`, and its memory follows the task's NUMA node
    /// (`memory_node` in the grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The device the program drives, as its user named it (`hetsched run --device`):
    /// an I/O device of the machine by its kernel name (`vda`) becomes the task's
    /// [`io_device`](TaskClass::io_device), which placement policies read
    /// (`io-affinity`); an accelerator name is carried, not used yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The program's architectural signature (`hetsched signature`): the task's
    /// [`signature`](TaskClass::signature) (the `signature` policy places by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Sig>,
    /// The task is this one of the task graph its client's uid declared to the daemon
    /// (the graph's index): it is granted a unit only once its predecessors have
    /// completed, and its kernel, footprint and priority are the graph's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_task: Option<u32>,
}

impl<Sig> Default for MetaInfo<Sig> {
    fn default() -> Self {
        MetaInfo {
            kind: String::new(),
            affinity: Affinity::default(),
            bytes_in: 0,
            weight: default_weight(),
            bytes_out: 0,
            checkpoint_ns: PerUnitType::default(),
            numa_home: None,
            pid: None,
            device: None,
            signature: None,
            graph_task: None,
        }
    }
}

impl<Sig> MetaInfo<Sig> {
    /// The same meta info with its signature in another form.
    pub fn map_signature<T>(self, f: impl FnOnce(Sig) -> T) -> MetaInfo<T> {
        MetaInfo {
            kind: self.kind,
            affinity: self.affinity,
            bytes_in: self.bytes_in,
            weight: self.weight,
            bytes_out: self.bytes_out,
            checkpoint_ns: self.checkpoint_ns,
            numa_home: self.numa_home,
            pid: self.pid,
            device: self.device,
            signature: self.signature.map(f),
            graph_task: self.graph_task,
        }
    }
}

fn default_weight() -> u32 {
    1024
}

fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A task's meta info: its own (id, arrival, memory home) and what it shares with the
/// tasks of its class, which it dereferences to (`task.affinity`, `task.kind`...).
///
/// Why shared: the tasks of one type from one source (a scenario's task or generator
/// entry, a client's codelet) carry the same meta info, about 150 bytes of it; held
/// once behind an [`Arc`], a waiting task costs 32 bytes of it, so that a million
/// waiting tasks fit in tens of MiB. Writing a class field through a task
/// (`task.affinity = ...`) gives that task a class of its own first (copy on write), so
/// the sharing is never visible.
///
/// The 32 bytes hold, besides the id, the arrival and the class, the memory home in four
/// bytes ([`numa_home`](Self::numa_home)) and the engine's host word
/// ([`TaskEntry::host`]): a `Task` is aligned to eight bytes, so the four bytes after
/// the home would be padding that a [`TaskEntry`] holding the task cannot use. The host
/// word is not meta info: it is neither serialized nor compared.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    /// Arrival time in nanoseconds since the start of the run.
    pub arrival_ns: u64,
    /// NUMA node holding the task's memory, if known (an engine moves it when the
    /// pages move). In files, a node number or nothing, as an `Option<u32>`.
    #[serde(default)]
    numa_home: NumaHome,
    #[serde(flatten)]
    pub class: Arc<TaskClass>,
    #[serde(skip)]
    host: u32,
}

/// The meta info alone (the host word is the engine's).
impl PartialEq for Task {
    fn eq(&self, other: &Task) -> bool {
        (self.id, self.arrival_ns, self.numa_home) == (other.id, other.arrival_ns, other.numa_home)
            && self.class == other.class
    }
}

/// A NUMA node, or none (`u32::MAX`, which no node has), in four bytes; in files an
/// `Option<u32>` as before.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Option<u32>", into = "Option<u32>")]
struct NumaHome(u32);

impl NumaHome {
    const NONE: NumaHome = NumaHome(u32::MAX);

    #[inline]
    fn get(self) -> Option<u32> {
        (self != Self::NONE).then_some(self.0)
    }
}

impl Default for NumaHome {
    fn default() -> Self {
        Self::NONE
    }
}

impl TryFrom<Option<u32>> for NumaHome {
    type Error = String;
    fn try_from(node: Option<u32>) -> Result<NumaHome, String> {
        match node {
            Some(u32::MAX) => Err(format!(
                "numa_home {} out of range (0 to {})",
                u32::MAX,
                u32::MAX - 1
            )),
            Some(n) => Ok(NumaHome(n)),
            None => Ok(NumaHome::NONE),
        }
    }
}

impl From<NumaHome> for Option<u32> {
    fn from(home: NumaHome) -> Option<u32> {
        home.get()
    }
}

impl std::fmt::Debug for NumaHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// The meta info the tasks of one class share (see [`Task`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskClass {
    /// Task type (codelet) name; performance models learn per type. Shared, not
    /// copied: every record of a task names its type.
    pub kind: Arc<str>,
    pub affinity: Affinity,
    /// Bytes copied to an accelerator before a run there / back after completion.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The accelerator unit holding the task's data, if any.
    pub device_home: Option<u32>,
    /// The I/O device the task reads or writes (index in `Machine::io_devices`), if
    /// any: its NUMA node is where the task's transfers are local (Akram et al.).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_device: Option<u32>,
    /// CFS-style weight (1024 = nice 0).
    pub weight: u32,
    /// The performance-model footprint of the task's data (StarPU's hash of its sizes,
    /// [`crate::footprint`]; 0: one model for every size), keying its history beside
    /// its type.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub footprint: u64,
    /// The application's priority (StarPU's `task->priority`, 0 by default): higher runs
    /// first under the policies that sort by it (`dmdas`).
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub priority: i32,
    /// Checkpoint interval per unit type in ns (0 = none): where an accelerator run may
    /// be interrupted.
    pub checkpoint_ns: PerUnitType<u64>,
    /// The task's cache and memory signature (`hetsched-sig`), opaque here; room for
    /// policies that place by it.
    pub signature: Option<Arc<str>>,
}

thread_local! {
    /// The class of [`Task::cpu`] tasks, shared rather than allocated per task.
    static CPU_CLASS: Arc<TaskClass> = {
        let mut affinity = Affinity::default();
        affinity.set(UnitType::Cpu, 1.0);
        Arc::new(TaskClass {
            kind: Arc::from("task"),
            affinity,
            bytes_in: 0,
            bytes_out: 0,
            device_home: None,
            io_device: None,
            weight: 1024,
            footprint: 0,
            priority: 0,
            checkpoint_ns: PerUnitType::default(),
            signature: None,
        })
    };
}

impl TaskClass {
    /// CPU-only tasks of type "task" with nothing else known (a copy of [`Task::cpu`]'s
    /// class, to build another from).
    pub fn cpu() -> TaskClass {
        CPU_CLASS.with(|c| TaskClass::clone(c))
    }
}

impl Task {
    /// A task of `class`, without a memory home.
    #[inline]
    pub fn new(id: TaskId, arrival_ns: u64, class: Arc<TaskClass>) -> Task {
        Task {
            id,
            arrival_ns,
            numa_home: NumaHome::NONE,
            class,
            host: 0,
        }
    }

    /// The NUMA node holding the task's memory, if known.
    #[inline]
    pub fn numa_home(&self) -> Option<u32> {
        self.numa_home.get()
    }

    /// Sets the task's memory home: a node below `u32::MAX` (nodes are few; inputs
    /// check theirs against the machine's first), or none.
    #[inline]
    pub fn set_numa_home(&mut self, node: Option<u32>) {
        self.numa_home = NumaHome::try_from(node).expect("a NUMA node below u32::MAX");
    }

    /// A CPU-only task of type "task" with nothing else known.
    #[inline]
    pub fn cpu(id: TaskId, arrival_ns: u64) -> Task {
        Task::new(id, arrival_ns, CPU_CLASS.with(Arc::clone))
    }
}

impl std::ops::Deref for Task {
    type Target = TaskClass;
    #[inline]
    fn deref(&self) -> &TaskClass {
        &self.class
    }
}

/// Copy on write: the task's class becomes its own before it changes.
impl std::ops::DerefMut for Task {
    #[inline]
    fn deref_mut(&mut self) -> &mut TaskClass {
        Arc::make_mut(&mut self.class)
    }
}

/// Where a task waits: a unit's queue or the engine's one central queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueId {
    Unit(u32),
    Central,
}

/// A task's current situation, kept by the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    Queued(QueueId),
    Running(u32),
}

/// What an engine knows about a live (submitted, not finished) task: its meta info and
/// what its runs so far took, as both engines report them, and a word its engine's host
/// keeps per task ([`host`](Self::host)). 48 bytes: its placement is kept in four (see
/// [`PlacementCode`]) and the host word in the task's spare four (see [`Task`]), as a
/// million of them may wait at once.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskEntry {
    pub task: Task,
    /// Nanoseconds spent running (transfers included) in the segments that ended (the
    /// simulator: segment ends; live: grant to free).
    pub run_ns: u64,
    /// Number of run segments started so far.
    pub runs: u32,
    placement: PlacementCode,
}

/// What a task store's slot holds before its first task: task 0 of the CPU class,
/// never live (the store's index says which slots are).
impl Default for TaskEntry {
    fn default() -> TaskEntry {
        TaskEntry::new(Task::cpu(0, 0))
    }
}

impl TaskEntry {
    /// A task that has not run yet, in the central queue, its host word 0.
    #[inline]
    pub fn new(task: Task) -> TaskEntry {
        let mut e = TaskEntry {
            task,
            run_ns: 0,
            runs: 0,
            placement: PlacementCode::CENTRAL,
        };
        e.task.host = 0;
        e
    }

    /// The word the engine's host keeps for this task (the simulator: the handle of its
    /// workload model's parameters): 0 until the host sets it. Policies have no use for
    /// it.
    #[inline]
    pub fn host(&self) -> u32 {
        self.task.host
    }

    #[inline]
    pub fn set_host(&mut self, word: u32) {
        self.task.host = word;
    }

    /// Where the task is now.
    #[inline]
    pub fn placement(&self) -> Placement {
        self.placement.get()
    }

    /// Unit ids must be below `PlacementCode::MAX_UNIT`.
    #[inline]
    pub fn set_placement(&mut self, placement: Placement) {
        self.placement = PlacementCode::new(placement);
    }
}

/// A [`Placement`] in four bytes: `Running(u)` is `u`, `Queued(Unit(u))` is `u` with the
/// top bit set, `Queued(Central)` is all ones (unit ids stay below 2^31 − 1; machines
/// have thousands of units).
#[derive(Clone, Copy, PartialEq, Eq)]
struct PlacementCode(u32);

impl PlacementCode {
    const QUEUED: u32 = 1 << 31;
    const CENTRAL: PlacementCode = PlacementCode(u32::MAX);
    const MAX_UNIT: u32 = Self::QUEUED - 1;

    #[inline]
    fn new(p: Placement) -> PlacementCode {
        let unit = |u: u32| {
            assert!(u < Self::MAX_UNIT, "unit id {u} out of range");
            u
        };
        match p {
            Placement::Running(u) => PlacementCode(unit(u)),
            Placement::Queued(QueueId::Unit(u)) => PlacementCode(Self::QUEUED | unit(u)),
            Placement::Queued(QueueId::Central) => Self::CENTRAL,
        }
    }

    #[inline]
    fn get(self) -> Placement {
        match self.0 {
            u if u < Self::QUEUED => Placement::Running(u),
            u32::MAX => Placement::Queued(QueueId::Central),
            q => Placement::Queued(QueueId::Unit(q & !Self::QUEUED)),
        }
    }
}

impl std::fmt::Debug for PlacementCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memory home and the host word fit in the task's 32 bytes; the home is an
    /// `Option<u32>` in files as it was, the host word nowhere.
    #[test]
    fn home_and_host_word_in_the_task() {
        assert_eq!(std::mem::size_of::<Task>(), 32);
        let mut e = TaskEntry::new(Task::cpu(3, 5));
        assert_eq!((e.task.numa_home(), e.host()), (None, 0));
        e.set_host(u32::MAX);
        e.task.set_numa_home(Some(u32::MAX - 1));
        assert_eq!(
            (e.task.numa_home(), e.host()),
            (Some(u32::MAX - 1), u32::MAX)
        );
        let json = serde_json::to_value(&e.task).unwrap();
        assert_eq!(json["numa_home"], u32::MAX - 1);
        assert!(json.get("host").is_none());
        let back: Task = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, e.task);
        assert_eq!(TaskEntry::new(back).host(), 0);
        e.task.set_numa_home(None);
        assert!(serde_json::to_value(&e.task).unwrap()["numa_home"].is_null());
        let mut bad = json;
        bad["numa_home"] = u32::MAX.into();
        let err = serde_json::from_value::<Task>(bad).unwrap_err().to_string();
        assert!(err.contains("numa_home 4294967295 out of range"), "{err}");
    }

    /// Every placement comes back as it went in, in an entry of 48 bytes.
    #[test]
    fn placements_round_trip_in_four_bytes() {
        let mut e = TaskEntry::new(Task::cpu(1, 0));
        assert_eq!(e.placement(), Placement::Queued(QueueId::Central));
        for u in [0, 1, 7, 1 << 20, PlacementCode::MAX_UNIT - 1] {
            for p in [Placement::Running(u), Placement::Queued(QueueId::Unit(u))] {
                e.set_placement(p);
                assert_eq!(e.placement(), p);
            }
        }
        e.set_placement(Placement::Queued(QueueId::Central));
        assert_eq!(e.placement(), Placement::Queued(QueueId::Central));
        assert_eq!(std::mem::size_of::<TaskEntry>(), 48);
        assert_eq!(std::mem::size_of::<Option<TaskEntry>>(), 48);
    }
}
