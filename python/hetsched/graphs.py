"""Task graphs from Python: a ``networkx.DiGraph`` as a scenario's ``[graph]``.

The simulator runs a workflow written in a scenario (``[graph] tasks``, ``files``; see
docs/graphs.md): this module only turns a graph object into that form, so a graph built
in Python runs as a file's does. networkx is not imported here: any object with
networkx's ``nodes(data=True)`` and ``in_edges(node, data=True)`` is accepted."""

from __future__ import annotations

from typing import Any, Dict, List


def graph(g: Any, *, runtime: str = "runtime", kind: str = "kind",
          size: str = "bytes") -> Dict[str, Any]:
    """A directed acyclic graph as a scenario's ``graph`` table.

    Each node is a task, named by ``str(node)``: its node attribute ``runtime`` (seconds
    on a capacity-1024 CPU, required) and ``kind`` (its category, whose models policies
    read; default ``"task"``). Each edge ``u → v`` makes ``u`` a parent of ``v``; with an
    edge attribute ``bytes`` (an integer) above 0 it is also a file of that size that
    ``u`` writes and ``v`` reads, which moves between memory nodes. Attribute names
    are the keyword arguments. The simulator checks the rest (a cycle, a negative
    runtime: ``ValueError`` naming the task).
    """
    tasks: List[Dict[str, Any]] = []
    files: List[Dict[str, Any]] = []
    names = {node: str(node) for node in g.nodes}
    if len(set(names.values())) != len(names):
        raise ValueError("graph: two nodes have the same name (str(node))")
    outputs: Dict[Any, List[str]] = {node: [] for node in g.nodes}
    inputs: Dict[Any, List[str]] = {node: [] for node in g.nodes}
    parents: Dict[Any, List[str]] = {node: [] for node in g.nodes}
    for node in g.nodes:
        for u, _, data in g.in_edges(node, data=True):
            parents[node].append(names[u])
            nbytes = data.get(size, 0)
            if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
                raise ValueError(f"graph: edge {names[u]!r} -> {names[node]!r}: "
                                 f"{size!r} {nbytes!r}, expected an integer >= 0")
            if nbytes:
                # Numbered: node names may hold "->".
                file = f"{len(files)}:{names[u]}->{names[node]}"
                files.append({"id": file, "bytes": nbytes})
                outputs[u].append(file)
                inputs[node].append(file)
    for node, data in g.nodes(data=True):
        if runtime not in data:
            raise ValueError(f"graph: node {names[node]!r} has no {runtime!r} attribute")
        tasks.append({
            "id": names[node],
            "name": str(data.get(kind, "task")),
            "runtime": float(data[runtime]),
            "parents": parents[node],
            "inputs": inputs[node],
            "outputs": outputs[node],
        })
    return {"tasks": tasks, "files": files}
