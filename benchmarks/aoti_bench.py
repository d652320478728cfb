"""The AOTI model harness, shipped inside the package: python -m slimtensor.bench.aoti_models MODEL_DIR ..."""

from slimtensor.bench.aoti_models import main

if __name__ == "__main__":
    main()
