"""The local model server: the embedded GGUF model in a process of its own, behind the OpenAI chat API.

`server` is that process; `supervisor` starts it on demand, reuses it while it runs, watches it and restarts it.
"""
