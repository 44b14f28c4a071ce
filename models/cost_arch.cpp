#include "models/cost_arch.hpp"

namespace stalesim {

const std::vector<CostArchitecture>& cost_architectures() {
  static const std::vector<CostArchitecture> all = {
      {"lenet5", "LeNet-5 for 32x32 single-channel digits", 61706, 2.0 * 416520,
       "LeCun, Bottou, Bengio, Haffner, Proc. IEEE 1998: C1 6@5x5, S2, C3 16@5x5 (full connection), "
       "S4, C5 120, F6 84, 10 outputs; parameters and multiply-adds (416,520) counted from those "
       "layer shapes"},
      {"resnet110", "ResNet-110 for CIFAR-10 (32x32)", 1.73e6, 2.0 * 2.55e8,
       "He, Zhang, Ren, Sun, CVPR 2016, section 4.2 (n = 18: 3 stages of 18 basic blocks, 16/32/64 "
       "filters): 1.7M parameters as in their Table 6; 2.55e8 multiply-adds counted from the "
       "layer shapes"},
      {"resnet50", "ResNet-50 for ImageNet (224x224)", 25.6e6, 2.0 * 3.8e9,
       "He, Zhang, Ren, Sun, CVPR 2016, Table 1: 3.8e9 multiply-adds (the paper's 'FLOPs'); "
       "25.6M parameters"},
      {"vgg16", "VGG-16 for ImageNet (224x224)", 138.36e6, 2.0 * 15.47e9,
       "Simonyan and Zisserman, ICLR 2015 (configuration D): 138M parameters (their Table 2); "
       "15.47e9 multiply-adds counted from the layer shapes"},
  };
  return all;
}

std::optional<CostArchitecture> find_cost_architecture(std::string_view name) {
  for (const auto& a : cost_architectures())
    if (a.name == name) return a;
  return std::nullopt;
}

}  // namespace stalesim
