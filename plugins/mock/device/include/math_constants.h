// Built-in (cudamux mock): CUDA's math constants.
#pragma once
#define CUDART_INF_F __builtin_inff()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_SQRT_2_F 1.414213562f
#define CUDART_MAX_NORMAL_F 3.402823466e38f
#define CUDART_MIN_DENORM_F 1.40129846e-45f
#define CUDART_INF __builtin_inf()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_PIO2 1.5707963267948966e+0
#define CUDART_SQRT_2 1.4142135623730951e+0
