"""Launch recipes for a cluster plan: mlx.launch (host file + arguments) or rpc-server + llama-server --rpc.

References: mlx docs usage/launching_distributed.html (mlx.distributed_config, mlx.launch --hostfile, --backend
ring|jaccl); mlx-lm mlx_lm/examples/pipeline_generate.py and sharded_generate.py; llama.cpp tools/rpc/README.md
(rpc-server -H/-p/-c, --rpc host:port,...), common/arg.cpp (-ngl, --tensor-split); exo README.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .._model import Frozen
from ..units import pad_to
from .results import ClusterPlan

RPC_PORT = 50052


class ClusterRecipe(BaseModel):
    model_config = Frozen
    hostfile: list[dict[str, Any]] | None = Field(None, description="mlx.launch host file (ring backend) as JSON")
    commands: list[str] = Field(description="One line per step; 'on <host>:' says where to run it")
    notes: list[str] = Field(default_factory=list)


def hosts(n: int) -> list[str]:
    return [f"mac{i + 1}.local" for i in range(n)]


def _mlx_repo(model_id: str, hf_repo: str | None, quant: str) -> str:
    name = (hf_repo or model_id).split("/")[-1]
    suffix = quant.removeprefix("mlx-").split("-g")[0]
    return f"mlx-community/{name}-{suffix}"


def recipe(p: ClusterPlan, hf_repo: str | None = None) -> ClusterRecipe:
    hs = hosts(len(p.nodes))
    cmds: list[str] = []
    for h, nd in zip(hs, p.nodes):
        if nd.sysctl:
            cmds.append(f"on {h}: {nd.sysctl}")
    if p.engine == "llama.cpp-rpc":
        for h in hs[1:]:
            cmds.append(f"on {h}: rpc-server -H 0.0.0.0 -p {RPC_PORT} -c")
        # device order: RPC servers in --rpc order, then the local Metal GPU (src/llama.cpp)
        order = p.nodes[1:] + p.nodes[:1]
        split = ",".join(str(n.layers[1] - n.layers[0]) for n in order if n.layers)
        rpc = ",".join(f"{h}:{RPC_PORT}" for h in hs[1:])
        ctx = pad_to(p.context * p.users, 256)
        name = (hf_repo or p.model).split("/")[-1]
        cmds.append(f"on {hs[0]}: llama-server -m {name}-{p.quant}.gguf --rpc {rpc} -ngl 99 --tensor-split {split} "
                    f"-c {ctx} -np {p.users} -fa on")
        return ClusterRecipe(commands=cmds, notes=[
            "--tensor-split lists layer proportions per device: the RPC servers in --rpc order, then this Mac",
            "rpc-server is a proof of concept without authentication: keep it on a private link (llama.cpp README)",
            "-c on rpc-server caches tensors on each worker's disk: later loads skip the network copy"])
    repo = _mlx_repo(p.model, hf_repo, p.quant)
    backend = p.transport.backend
    over = "thunderbolt" if p.transport.link.startswith("tb") else "ethernet"
    if p.engine == "exo":
        cmds += [f"on {h}: exo" for h in hs]
        notes = [(f"exo discovers the Macs itself; choose {p.mode} sharding and "
                 f"{'MlxJaccl (RDMA)' if backend == 'jaccl' else 'MlxRing (TCP)'} in its dashboard for {repo}")]
        return ClusterRecipe(commands=cmds, notes=notes)
    cmds.append(f"on {hs[0]}: mlx.distributed_config --verbose --backend {backend} --hosts {','.join(hs)} "
                f"--over {over} --auto-setup --output hosts.json")
    script = "pipeline_generate.py" if p.mode == "pipeline" else "sharded_generate.py"
    cmds.append(f"on {hs[0]}: mlx.launch --hostfile hosts.json --backend {backend} "
                f"$(python -c 'import mlx_lm, os; print(os.path.dirname(mlx_lm.__file__))')/examples/{script} "
                f"--model {repo} --prompt \"...\" --max-tokens {p.gen_tokens}")
    hostfile = [{"ssh": h, "ips": [f"10.0.0.{i + 1}"]} for i, h in enumerate(hs)] if backend == "ring" else None
    notes = ["hosts.json is written by mlx.distributed_config; the ring form is one {ssh, ips} entry per rank",
             "every Mac needs the same Python env, mlx-lm and passwordless ssh from the first Mac"]
    if p.mode == "pipeline":
        notes.append("mlx-lm's pipeline() gives every rank an equal share of layers (the split above); for a "
                     "memory-weighted split of mixed Macs use exo or llama.cpp RPC")
    return ClusterRecipe(hostfile=hostfile, commands=cmds, notes=notes)
