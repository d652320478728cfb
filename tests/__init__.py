# Note [The tests are one package]
# Without this file pytest puts tests/ itself on sys.path and imports tests/cuda as the top-level package
# `cuda`, which shadows NVIDIA's `cuda` namespace package (cuda.pathfinder, cuda.bindings): cupy 14 could then
# not be imported inside the test session (seen on the H200: "No module named 'cuda.pathfinder'"). As one
# package, test modules are named tests.cuda.test_gpu and so on, and import each other as tests.<folder>.
