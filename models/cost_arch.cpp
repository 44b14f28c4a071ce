#include "models/cost_arch.hpp"

namespace stalesim {

const std::vector<CostArchitecture>& cost_architectures() {
  static const std::vector<CostArchitecture> all = {
      {"lenet5", "LeNet-5 for 32x32 single-channel digits", 61706, 2.0 * 416520,
       "LeCun, Bottou, Bengio, Haffner, Proc. IEEE 1998: C1 6@5x5, S2, C3 16@5x5 (full connection), "
       "S4, C5 120, F6 84, 10 outputs; parameters and multiply-adds (416,520) counted from those "
       "layer shapes"},
      {"alexnet-cifar", "AlexNet, CIFAR-10 variant (cuda-convnet layers-18pct, 32x32x3)", 89578,
       2.0 * 12298240,
       "Krizhevsky, Sutskever, Hinton, NIPS 2012 describe the ImageNet network only; their CIFAR-10 "
       "net is the one Krizhevsky shipped with cuda-convnet (layers-18pct.cfg; Krizhevsky 2009, "
       "'Learning Multiple Layers of Features from Tiny Images'): conv 32@5x5 pad 2, max-pool 3x3/2, "
       "conv 32@5x5, pool, conv 64@5x5, pool, fully connected 10. Parameters (89,578) and "
       "multiply-adds (12,298,240 = 2,457,600 + 6,553,600 + 3,276,800 + 10,240) counted from those "
       "layer shapes; local response normalization and pooling are not counted"},
      {"resnet110", "ResNet-110 for CIFAR-10 (32x32)", 1.73e6, 2.0 * 2.55e8,
       "He, Zhang, Ren, Sun, CVPR 2016, section 4.2 (n = 18: 3 stages of 18 basic blocks, 16/32/64 "
       "filters): 1.7M parameters as in their Table 6; 2.55e8 multiply-adds counted from the "
       "layer shapes"},
      {"resnet50", "ResNet-50 for ImageNet (224x224)", 25.6e6, 2.0 * 3.8e9,
       "He, Zhang, Ren, Sun, CVPR 2016, Table 1: 3.8e9 multiply-adds (the paper's 'FLOPs'); "
       "25.6M parameters"},
      {"resnet50-cifar", "ResNet-50 for CIFAR (32x32): 3x3 stem, no max-pool, bottleneck stages 3-4-6-3",
       23520842, 2.0 * 1297829888,
       "He, Zhang, Ren, Sun, CVPR 2016, Table 1's 50-layer bottleneck network (stages of 3, 4, 6, 3 "
       "blocks, 64-128-256-512 x 4 channels) adapted to 32x32 inputs as CIFAR experiments such as "
       "the DSSP paper's (Zhao et al., ICDCS 2019) use it: a 3x3/1 stem with 64 filters and no "
       "max-pool, 10 outputs. Parameters (23,520,842, batch-norm scales and shifts included) and "
       "multiply-adds (1,297,829,888, convolutions and the classifier) counted from those layer shapes"},
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
