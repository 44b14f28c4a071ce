// The program each layer's library is linked into alone (CMakeLists.txt, stalesim_layer): all of
// the library's objects and nothing but the layers it links, so a call into a layer above it is
// an undefined reference and the build fails. It is never run.
int main() { return 0; }
