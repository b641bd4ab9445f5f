// The names of the ops in the one table of the ops that exist (transforms/op_table.cpp,
// which make_op() reads), for the faces that check their own ops against it: the Python
// package's op classes (_forkfeed.op_names()).
#pragma once

#include <string>
#include <vector>

namespace forkfeed {

// Every op's name, in the table's order (ToTensor and PILToTensor, which make no op, aside).
std::vector<std::string> op_names();

}  // namespace forkfeed
