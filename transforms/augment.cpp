// transforms/augment.cpp: being written.
