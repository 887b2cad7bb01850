// Built-in (cudamux mock): what this header gives device code comes with the prelude.
#pragma once
