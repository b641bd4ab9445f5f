// transforms/pipeline_spec.cpp: being written.
