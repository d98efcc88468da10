"""The "What is installed?" page: the models on disk (= `plan models --installed`, cli/installed.py) with their exact
bytes, fit and decode speed on a Mac, and the command that runs each. No arithmetic: numbers via planner.format."""

from __future__ import annotations

from planner.format import fmt_bytes, fmt_tok_s

PAGE_TITLE = "What is installed on this Mac?"
VERDICT = {"fits": "fits", "tight": "tight", "raise-limit": "raise limit", "no-fit": "no fit"}


def table_rows(r) -> list[dict[str, str]]:
    """One dict per installed model (an InstalledResult of cli/installed.py), the columns of the CLI."""
    return [{"model": m.name, "from": m.source, "quant": m.quant or m.format, "bytes": f"{m.bytes:,}",
             "size": fmt_bytes(m.bytes), "fit": VERDICT.get(m.verdict or "", "unreadable" if m.error else "–"),
             "decode tok/s": fmt_tok_s(m.decode_tok_s_per_user) if m.decode_tok_s_per_user else "–", "run": m.run,
             "path": m.path} for m in r.models]


def _this_mac():
    from sources import thismac

    if not thismac.on_mac():
        return None
    try:
        return thismac.detect()
    except Exception:  # noqa: BLE001 - the page then asks for the Mac
        return None


def page() -> None:
    import streamlit as st

    from app.readings import for_web
    from planner import profiles
    from planner.errors import PlannerError
    from sources.installed_fit import installed

    st.title(PAGE_TITLE)
    st.caption("Every model in Ollama's, LM Studio's, the Hugging Face cache's and llama.cpp's folders (and the "
               "folders you name), with its exact size on disk, whether it fits this Mac, how fast it decodes and "
               "the command that runs it.")
    mac = _this_mac()
    chips = profiles.all_chips()
    names = sorted({c.name for c in chips})
    c1, c2, c3, c4 = st.columns(4)
    default_name = mac.chip_name if mac is not None and mac.chip_name in names else None
    name = c1.selectbox("Chip", names, index=names.index(default_name) if default_name else None,
                        placeholder="(memory only)", key="in_chip")
    bins = sorted((c for c in chips if c.name == name), key=lambda c: c.gpu_cores)
    cores_opts = [c.gpu_cores for c in bins] or [None]
    gc = mac.facts.gpu_cores if mac is not None else None
    cores = c2.selectbox("GPU cores", cores_opts, index=cores_opts.index(gc) if gc in cores_opts else 0,
                         key=f"in_cores_{name}")
    chip = next((c for c in bins if c.gpu_cores == cores), None)
    sizes = sorted(chip.ram_options_gb) if chip else [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512]
    ram_default = int(mac.ram_gb) if mac is not None and mac.ram_gb and int(mac.ram_gb) in sizes else None
    ram = c3.selectbox("RAM", sizes, index=sizes.index(ram_default) if ram_default else sizes.index(32)
                       if 32 in sizes else 0, key=f"in_ram_{name}_{cores}", format_func=lambda g: f"{g} GB")
    context = c4.number_input("Context per user", 256, 1_048_576, 8192, step=1024, key="in_ctx")
    dirs = st.text_input("More folders to read (separated by ;)", key="in_dirs")
    if mac is not None:
        st.caption(for_web(mac.headline()))
    try:
        r = installed([d.strip() for d in dirs.split(";") if d.strip()], ram=float(ram),
                      chip=name if chip else None, gpu_cores=cores if chip else None, context=int(context), users=1,
                      macos=(mac.macos if mac is not None and mac.macos else "15"))
    except (PlannerError, ValueError) as e:
        st.error(for_web(e).splitlines()[0])
        return
    if r.roots:
        st.caption("Read: " + "; ".join(f"{s} {p}" for s, p in r.roots))
    if not r.models:
        st.info("No model found in the default folders; name a folder above.")
        return
    st.dataframe(table_rows(r), hide_index=True, use_container_width=True)
    for m in r.models:
        if m.error:
            st.warning(f"{m.name}: {m.error}")
    st.download_button("Download as JSON", r.model_dump_json(indent=2), file_name="installed.json",
                       mime="application/json", key="in_download")
