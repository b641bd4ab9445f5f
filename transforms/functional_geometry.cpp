// transforms/functional_geometry.cpp: being written.
