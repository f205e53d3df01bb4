print("sfu")
