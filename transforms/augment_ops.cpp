// transforms/augment_ops.cpp: being written.
