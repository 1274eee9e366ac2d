# Included after each project() of llama-cpp-python's build (CMAKE_PROJECT_INCLUDE, passed in CMAKE_ARGS by
# tools/install_dev.sh). llama-cpp-python forces LLAMA_BUILD_COMMON on in its cache, yet its Python package
# loads only libllama, libggml and libmtmd: libllama-common (llama.cpp's command-line helpers, its JSON and
# chat-template parsers and an HTTP client) was 41 % of the compile time and is never loaded. A normal
# variable set here, in the top directory, shadows that cache entry for every directory below it (CMake
# policies CMP0126 and CMP0077, on in both CMakeLists), so llama.cpp neither builds nor installs it.
set(LLAMA_BUILD_COMMON OFF)
