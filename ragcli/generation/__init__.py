"""Generation: the GGUF models that write answers, rewrite queries and select hits.

`ragcli.generation.llama` holds the `Generator` protocol and its llama.cpp implementation
(`llama_cpp` is imported only when a model is loaded), `ragcli.generation.chooser` which model
a command's settings choose, `ragcli.generation.catalog` every GGUF `rag models` lists,
`ragcli.generation.gguf` a GGUF file's header, and `ragcli.generation.qwen` the `[qwen]` extra.
Nothing is imported here, so naming a submodule stays as light as it was.
"""
