//! Task graphs a user gets wrong, through `hetsched simulate`: each is one line on stderr
//! naming the file and the codelet or node at fault, exit 2 (a model file of a StarPU
//! version this does not read, a cyclic graph, a tile size the models never timed).

mod common;

use common::{assert_input_error, hetsched};
use hetsched_topology::starpu::DEBIAN_DIR;
use std::path::Path;

fn installed() -> bool {
    let there = Path::new(DEBIAN_DIR).join("bus/idgraf.config").exists();
    if !there {
        println!("skipped: {DEBIAN_DIR} is not installed (Debian package starpu-examples)");
    }
    there
}

/// A scenario of a 4 × 4 Cholesky on `machine`, written to `dir`; its path.
fn cholesky(dir: &Path, machine: &str, tile: u32) -> String {
    let path = dir.join("s.toml");
    std::fs::write(
        &path,
        format!("machine = \"{machine}\"\npolicies = [\"dmda\"]\n[graph]\nalgorithm = \"cholesky\"\ntiles = 4\ntile = {tile}\n"),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_model_file_of_another_version_names_the_file_and_line() {
    if !installed() {
        return;
    }
    // idgraf's calibration, copied, one codelet's file rewritten as version 44.
    let dir = tempfile::tempdir().unwrap();
    let sampling = dir.path().join("sampling");
    for sub in ["bus", "codelets/45"] {
        std::fs::create_dir_all(sampling.join(sub)).unwrap();
        for e in std::fs::read_dir(Path::new(DEBIAN_DIR).join(sub)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains("idgraf") {
                std::fs::copy(e.path(), sampling.join(sub).join(&name)).unwrap();
            }
        }
    }
    let file = sampling.join("codelets/45/chol_model_22.idgraf");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen("\n45\n", "\n44\n", 1)).unwrap();
    let machine = format!("starpu:{}:idgraf", sampling.display());
    let out = hetsched(&["simulate", &cholesky(dir.path(), &machine, 960)]);
    assert_input_error(
        &out,
        &["chol_model_22.idgraf:3", "performance model version \"44\""],
    );
}

#[test]
fn a_cyclic_graph_names_a_task_on_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.dot"),
        "digraph g { a [runtime = 1]; b [runtime = 1]; c [runtime = 1]; a -> b -> c -> b; }",
    )
    .unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(&scenario, "machine = \"ding\"\n[graph]\nfile = \"g.dot\"\n").unwrap();
    let out = hetsched(&["simulate", scenario.to_str().unwrap()]);
    assert_input_error(&out, &["g.dot", "task \"b\" is on a cycle of parents"]);
}

#[test]
fn a_tile_size_the_models_never_timed_names_the_codelet_and_footprint() {
    if !installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = hetsched(&["simulate", &cholesky(dir.path(), "starpu:idgraf", 123)]);
    assert_input_error(
        &out,
        &[
            "task 0 of the graph (chol_model_11, footprint ",
            "has no performance model",
        ],
    );
}
