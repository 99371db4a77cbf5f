"""nv-wavenet: a Deep Voice style autoregressive WaveNet vocoder, its training recipe and its inference paths.

model.py (the network), incremental.py (sample-by-sample CPU inference and the weight export the CUDA kernels read),
data_function.py, loss_function.py, arg_parser.py and recipe.py (training with `train.py -m WaveNet`),
vocoder.py (`inference.py --wavenet`), kernels.py (the CUDA kernels in csrc/, and their CPU emulation for tests) and
benchmark.py. Importing the package needs neither CUDA nor the compiled kernels.
"""
