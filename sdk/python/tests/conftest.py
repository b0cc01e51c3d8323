import os
import sys

# The package from this checkout (sdk/test.sh also runs the tests against the built wheel).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if not os.environ.get("LOCKSTEP_SDK_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
