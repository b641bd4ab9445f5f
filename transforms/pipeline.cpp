// transforms/pipeline.cpp: being written.
