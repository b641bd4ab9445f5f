// transforms/functional_color.cpp: being written.
