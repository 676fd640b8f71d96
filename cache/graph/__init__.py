"""The build graph: the pipeline's stages wired as engine tasks and groups (`build_graph`,
`tasks`, one module per group), what the groups hand each other (`group_records`), the
compile layout as tasks (`layout_group`; a host build's, from the generator's item values:
`host_layout_group`), the manifest, and the records `check` and `show` read from a run
(`spec_records`)."""

__all__ = ["build_graph", "group_records", "host_layout_group", "kernel_family", "layout_group",
           "manifest", "spec_records"]
