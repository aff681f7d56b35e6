# Included after every project() call of the llama-cpp-python build (scripts/install.sh passes it as
# CMAKE_PROJECT_INCLUDE). llama-cpp-python forces LLAMA_BUILD_COMMON on in its cache, but its Python bindings load
# only libllama and ggml: the common library (argument parsing, chat templates, an HTTP client, for llama.cpp's
# own command-line tools) was half the compile. A normal variable shadows the cached one in every directory below.
set(LLAMA_BUILD_COMMON OFF)
