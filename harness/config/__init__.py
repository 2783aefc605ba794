"""What the user asked, loaded strictly and made into a plan: vmconfig files (vmconfig.py), libvirt
host URIs, resolving a vmconfig and a suite into a Plan (resolve.py), the fit of a plan before the
boot (fit.py) and the fidelity benchmark's plan."""
