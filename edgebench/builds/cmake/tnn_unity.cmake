# Runs inside TNN's project() (CMAKE_PROJECT_TNN_INCLUDE) when edgebench builds TNN as a unity
# build: this file defines a file-level helper whose name another optimizer file declares as a
# variable, so it is compiled on its own.
set_source_files_properties(
  ${CMAKE_SOURCE_DIR}/source/tnn/optimizer/net_optimizer_insert_layout_reformat.cc
  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
