import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if not os.environ.get("LOCKSTEP_SDK_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python", "src"))
